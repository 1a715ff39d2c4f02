#define _GNU_SOURCE
#include "CTUNShims.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int st_interface_name_capacity(void) { return IFNAMSIZ; }

int st_tun_open(const char *requested_name, int want_vnet_header, char *actual_name, size_t length,
                int *vnet_header, int *error) {
    *vnet_header = 0;
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
    // Only when the kernel says it has the header: an old kernel refuses unknown flags.
    unsigned int features = 0;
    if (want_vnet_header && ioctl(fd, TUNGETFEATURES, &features) == 0 && (features & IFF_VNET_HDR)) {
        request.ifr_flags |= IFF_VNET_HDR;
    }
    strncpy(request.ifr_name, requested_name, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &request) < 0) {
        *error = errno;
        close(fd);
        return -1;
    }
    if (request.ifr_flags & IFF_VNET_HDR) {
        int size = (int)sizeof(struct virtio_net_hdr);
        if (ioctl(fd, TUNSETVNETHDRSZ, &size) == 0) {
            *vnet_header = 1;
        } else {
            *error = errno;
            close(fd);
            return -1;
        }
    }
    if (length > 0) {
        strncpy(actual_name, request.ifr_name, length - 1);
        actual_name[length - 1] = '\0';
    }
    return fd;
}

int st_tun_set_offloads(int fd, unsigned int offloads, int *error) {
    if (ioctl(fd, TUNSETOFFLOAD, (unsigned long)offloads) < 0) {
        *error = errno;
        return -1;
    }
    return 0;
}

ssize_t st_write_two(int fd, const void *first, size_t first_length, const void *second, size_t second_length) {
    struct iovec parts[2] = {
        {.iov_base = (void *)first, .iov_len = first_length},
        {.iov_base = (void *)second, .iov_len = second_length},
    };
    return writev(fd, parts, 2);
}

int st_control_socket_open(int *error) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) *error = errno;
    return fd;
}

int st_tun_open_in_namespace(const char *netns_path, const char *requested_name, int want_vnet_header,
                             char *actual_name, size_t length, int *vnet_header,
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
    int fd = st_tun_open(requested_name, want_vnet_header, actual_name, length, vnet_header, error);
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
