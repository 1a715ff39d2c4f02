// A BIO over memory the caller lends for the length of one OpenSSL call, so
// ciphertext moves straight between OpenSSL and the caller's buffers (a
// memory BIO costs a zeroing and a copy more each way).
#include "CTLSShims.h"
#include <stdlib.h>
#include <string.h>

static BIO_METHOD *window_method;

static int window_create(BIO *bio) {
    ctls_window *window = calloc(1, sizeof(ctls_window));
    if (window == NULL) return 0;
    BIO_set_data(bio, window);
    BIO_set_init(bio, 1);
    return 1;
}

static int window_destroy(BIO *bio) {
    ctls_window *window = BIO_get_data(bio);
    if (window != NULL) {
        free(window->overflow);
        free(window);
    }
    BIO_set_data(bio, NULL);
    return 1;
}

static int window_read(BIO *bio, char *out, int length) {
    ctls_window *window = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (window->in_length == 0) {
        // Nothing lent: "wait for more", never end of file.
        BIO_set_retry_read(bio);
        return -1;
    }
    size_t count = (size_t)length < window->in_length ? (size_t)length : window->in_length;
    memcpy(out, window->in, count);
    window->in += count;
    window->in_length -= count;
    return (int)count;
}

// Keeps what does not fit the lent space, in order, so a write never has to be retried.
static int window_overflow(ctls_window *window, const char *bytes, size_t count) {
    if (window->overflow_length + count > window->overflow_capacity) {
        size_t capacity = window->overflow_capacity * 2;
        if (capacity < window->overflow_length + count) capacity = window->overflow_length + count + 4096;
        uint8_t *grown = realloc(window->overflow, capacity);
        if (grown == NULL) return 0;
        window->overflow = grown;
        window->overflow_capacity = capacity;
    }
    memcpy(window->overflow + window->overflow_length, bytes, count);
    window->overflow_length += count;
    return 1;
}

static int window_write(BIO *bio, const char *bytes, int length) {
    ctls_window *window = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (length <= 0) return 0;
    size_t count = (size_t)length;
    size_t room = window->out_capacity - window->out_length;
    if (window->overflow_length == 0 && count <= room) {
        memcpy(window->out + window->out_length, bytes, count);
        window->out_length += count;
        return length;
    }
    return window_overflow(window, bytes, count) ? length : -1;
}

static long window_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)bio; (void)number; (void)pointer;
    switch (command) {
    case BIO_CTRL_FLUSH: return 1;
    case BIO_CTRL_PUSH: case BIO_CTRL_POP: return 0;
    default: return 0;
    }
}

static void window_method_init(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "simpletunnel window");
    if (method == NULL) return;
    if (!BIO_meth_set_create(method, window_create) || !BIO_meth_set_destroy(method, window_destroy)
        || !BIO_meth_set_read(method, window_read) || !BIO_meth_set_write(method, window_write)
        || !BIO_meth_set_ctrl(method, window_ctrl)) {
        BIO_meth_free(method);
        return;
    }
    window_method = method;
}

BIO *ctls_window_bio_new(void) {
    // Made once and shared by every connection; never changed after setup.
    static CRYPTO_ONCE once = CRYPTO_ONCE_STATIC_INIT;
    if (!CRYPTO_THREAD_run_once(&once, window_method_init) || window_method == NULL) return NULL;
    return BIO_new(window_method);
}

ctls_window *ctls_window_bio_state(BIO *bio) {
    return BIO_get_data(bio);
}

void ctls_window_take_overflow(ctls_window *window, uint8_t *into) {
    memcpy(into, window->overflow, window->overflow_length);
    window->overflow_length = 0;
}
