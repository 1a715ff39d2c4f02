#define _GNU_SOURCE
#include "CTUNShims.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int st_interface_name_capacity(void) { return IFNAMSIZ; }

int st_tun_open(const char *requested_name, char *actual_name, size_t length, int *error) {
    if (strlen(requested_name) >= IFNAMSIZ) {
        *error = ENAMETOOLONG;
        return -1;
    }
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *error = errno;
        return -1;
    }
    struct ifreq request;
    memset(&request, 0, sizeof(request));
    request.ifr_flags = IFF_TUN | IFF_NO_PI;
    strncpy(request.ifr_name, requested_name, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &request) < 0) {
        *error = errno;
        close(fd);
        return -1;
    }
    if (length > 0) {
        strncpy(actual_name, request.ifr_name, length - 1);
        actual_name[length - 1] = '\0';
    }
    return fd;
}

int st_control_socket_open(int *error) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) *error = errno;
    return fd;
}

int st_tun_open_in_namespace(const char *netns_path, const char *requested_name,
                             char *actual_name, size_t length,
                             int *control_fd, int *failed_step, int *error) {
    *failed_step = ST_STEP_ENTER;
    *control_fd = -1;
    // thread-self, not self: setns changes only this thread.
    int original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (original < 0) {
        *error = errno;
        return -1;
    }
    int target = open(netns_path, O_RDONLY | O_CLOEXEC);
    if (target < 0) {
        *error = errno;
        close(original);
        return -1;
    }
    int entered = setns(target, CLONE_NEWNET);
    if (entered < 0) *error = errno;
    close(target);
    if (entered < 0) {
        close(original);
        return -1;
    }
    *failed_step = ST_STEP_NONE;
    int fd = st_tun_open(requested_name, actual_name, length, error);
    if (fd >= 0) {
        *control_fd = st_control_socket_open(error);
        if (*control_fd < 0) {
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) *failed_step = ST_STEP_OPEN;
    if (setns(original, CLONE_NEWNET) < 0 && fd >= 0) {
        *failed_step = ST_STEP_RETURN;
        *error = errno;
    }
    close(original);
    return fd;
}

int st_interface_mtu(int control_fd, const char *name, int *error) {
    struct ifreq request;
    memset(&request, 0, sizeof(request));
    strncpy(request.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(control_fd, SIOCGIFMTU, &request) < 0) {
        *error = errno;
        return -1;
    }
    return request.ifr_mtu;
}

int st_wake_fd_open(int *error) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) *error = errno;
    return fd;
}

int st_wake_fd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
}

int st_poll_readable(int fd, int wake_fd, int timeout_ms, int *error) {
    struct pollfd fds[2] = {
        { .fd = fd, .events = POLLIN },
        { .fd = wake_fd, .events = POLLIN },
    };
    int ready = poll(fds, 2, timeout_ms);
    if (ready < 0) {
        *error = errno;
        return -1;
    }
    if (ready == 0) return 0;
    if (fds[1].revents) return 2;
    if (fds[0].revents & POLLIN) return 1;
    // POLLERR/POLLHUP/POLLNVAL without data: the interface is gone or the
    // descriptor is bad; reporting it stops a reader that would otherwise spin.
    return 3;
}
