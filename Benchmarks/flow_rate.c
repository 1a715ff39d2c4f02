// Native flows-per-second generator for Benchmarks/app-layer.sh (FLOW_GENERATOR=c).
// Does what `app_layer_helper.py flow-rate` does, with less CPU of its own, so
// that on a 2-core machine the generator takes less from the processes it measures:
// connect to 127.0.0.1:PORT, TCP_NODELAY, send 64 bytes, read the 64-byte echo,
// close; FLOWS times or for MAX_SECONDS, over CONCURRENCY threads. Prints the same
// JSON object as the Python helper.
//
//   cc -O2 -pthread -o flow-rate Benchmarks/flow_rate.c
//   flow-rate PORT FLOWS CONCURRENCY MAX_SECONDS
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int port, flows, concurrency;
static double deadline;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int next_flow, done, errors;
static char first_error[128];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

// One flow; 0 on success, else an errno-like code.
static int one_flow(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return errno;
    struct timeval timeout = {.tv_sec = 10};  // the Python helper's default timeout
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int result = 0;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        result = errno;
        goto out;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char payload[64], echo[65536];
    memset(payload, 'x', sizeof payload);
    if (send(fd, payload, sizeof payload, MSG_NOSIGNAL) != (ssize_t)sizeof payload) {
        result = errno ? errno : EIO;
        goto out;
    }
    size_t got = 0;
    while (got < sizeof payload) {
        ssize_t n = recv(fd, echo, sizeof echo, 0);
        if (n <= 0) {
            result = n == 0 ? ECONNRESET : errno;
            goto out;
        }
        got += (size_t)n;
    }
out:
    close(fd);
    return result;
}

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        int stop = next_flow >= flows || now() > deadline || errors > (flows / 10 > 10 ? flows / 10 : 10);
        if (!stop) next_flow++;
        pthread_mutex_unlock(&lock);
        if (stop) return NULL;
        int error = one_flow();
        pthread_mutex_lock(&lock);
        if (error == 0) {
            done++;
        } else {
            errors++;
            if (!first_error[0]) snprintf(first_error, sizeof first_error, "%s", strerror(error));
        }
        pthread_mutex_unlock(&lock);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s PORT FLOWS CONCURRENCY MAX_SECONDS\n", argv[0]);
        return 2;
    }
    port = atoi(argv[1]);
    flows = atoi(argv[2]);
    concurrency = atoi(argv[3]);
    double max_seconds = atof(argv[4]);
    if (port <= 0 || port > 65535 || flows <= 0 || concurrency <= 0 || concurrency > 1024 || max_seconds <= 0) {
        fprintf(stderr, "invalid arguments\n");
        return 2;
    }
    double start = now();
    deadline = start + max_seconds;
    pthread_t threads[1024];
    for (int i = 0; i < concurrency; i++) pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < concurrency; i++) pthread_join(threads[i], NULL);
    double elapsed = now() - start;
    printf("{\"flows\": %d, \"errors\": %d, \"first_error\": ", done, errors);
    if (first_error[0]) printf("\"%s\"", first_error); else printf("null");
    printf(", \"seconds\": %.4f, \"concurrency\": %d, \"flows_per_second\": %.1f, \"generator\": \"c\"}\n",
           elapsed, concurrency, elapsed > 0 ? done / elapsed : 0.0);
    return 0;
}
