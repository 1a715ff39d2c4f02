// Linux TUN and network-namespace calls whose structs (ifreq) and flags
// Swift cannot use directly. Every function returns -1 and stores errno in
// *error on failure, so the caller can report strerror text.
#ifndef C_TUN_SHIMS_H
#define C_TUN_SHIMS_H
#include <stddef.h>

/// IFNAMSIZ, so Swift can size the name buffer.
int st_interface_name_capacity(void);

#include <sys/types.h>

/// Opens /dev/net/tun as a non-blocking, close-on-exec IFF_TUN | IFF_NO_PI
/// device. `requested_name` may be empty (kernel picks "tunN") or a pattern
/// such as "stun%d". The name the kernel chose is copied to `actual_name`.
/// With `want_vnet_header`, and when the kernel offers it, the device is
/// opened with IFF_VNET_HDR and a 10-byte virtio_net_hdr before every packet
/// read or written; *vnet_header says whether that happened.
int st_tun_open(const char *requested_name, int want_vnet_header, char *actual_name, size_t length,
                int *vnet_header, int *error);

/// TUNSETOFFLOAD: which TUN_F_* offloads the kernel may hand us (needs a vnet header).
int st_tun_set_offloads(int fd, unsigned int offloads, int *error);

/// One writev() of two parts: a virtio_net_hdr and its packet.
ssize_t st_write_two(int fd, const void *first, size_t first_length, const void *second, size_t second_length);

/// TUN_F_* flags for st_tun_set_offloads.
enum { ST_TUN_F_CSUM = 0x01, ST_TUN_F_TSO4 = 0x02, ST_TUN_F_TSO6 = 0x04, ST_TUN_F_USO4 = 0x20, ST_TUN_F_USO6 = 0x40 };

/// Like st_tun_open, but inside the network namespace at `netns_path`
/// (/var/run/netns/NAME). The calling thread enters the namespace, opens the
/// device and a control socket there, and returns to its own namespace;
/// both descriptors keep their namespace afterwards. Returns the device fd;
/// *control_fd receives the socket. *failed_step tells what went wrong:
/// ST_STEP_NONE, ST_STEP_ENTER (namespace not entered, -1 returned),
/// ST_STEP_OPEN (device or socket not opened, -1 returned) or ST_STEP_RETURN
/// (device opened, but the thread stays in the namespace: do not reuse it).
enum { ST_STEP_NONE = 0, ST_STEP_ENTER = 1, ST_STEP_OPEN = 2, ST_STEP_RETURN = 3 };
int st_tun_open_in_namespace(const char *netns_path, const char *requested_name, int want_vnet_header,
                             char *actual_name, size_t length, int *vnet_header,
                             int *control_fd, int *failed_step, int *error);

/// A datagram socket for interface ioctls in the calling thread's namespace.
int st_control_socket_open(int *error);

/// The interface's MTU via SIOCGIFMTU on `control_fd`.
int st_interface_mtu(int control_fd, const char *name, int *error);

/// A non-blocking eventfd used to wake a thread blocked in poll().
int st_wake_fd_open(int *error);
/// Adds 1 to the eventfd counter (makes it readable).
int st_wake_fd_signal(int fd);

/// Waits for `fd` to become readable or `wake_fd` to be signalled.
/// Returns 1 when `fd` is readable, 2 when woken, 3 when `fd` reports an
/// error or hang-up without data, 0 on timeout, -1 with *error on failure.
int st_poll_readable(int fd, int wake_fd, int timeout_ms, int *error);

// Sets glibc malloc's M_MMAP_THRESHOLD, M_TRIM_THRESHOLD and M_TOP_PAD (bytes);
// 1 when all three were accepted.
int st_tune_malloc(int mmap_threshold, int trim_threshold, int top_pad);

// glibc's malloc_trim(0): gives the kernel back the free pages of every arena,
// below the top too; 1 when some memory was released.
int st_malloc_trim(void);

/// Drops the process to `uid`/`gid` (no supplementary groups) for good,
/// keeping only the capabilities whose bits are set in `keep` (1 << CAP_x,
/// x < 32). Every thread takes the new user and loses its capabilities; the
/// calling thread keeps `keep` as effective, permitted, inheritable and
/// ambient, so programs it starts (`ip`) have them too. On failure returns
/// -1 with the step in *failed_step and errno in *error.
enum {
    ST_DROP_NONE = 0, ST_DROP_KEEPCAPS = 1, ST_DROP_GROUPS = 2, ST_DROP_GID = 3, ST_DROP_UID = 4,
    ST_DROP_CAPSET = 5, ST_DROP_AMBIENT = 6, ST_DROP_VERIFY = 7
};
int st_drop_privileges(unsigned int uid, unsigned int gid, unsigned int keep, int *failed_step, int *error);

#endif
