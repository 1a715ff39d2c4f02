#define _GNU_SOURCE
#include "CTUNShims.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int st_drop_privileges(unsigned int uid, unsigned int gid, unsigned int keep, int *failed_step, int *error) {
    *failed_step = ST_DROP_NONE;
    // Keep the permitted set through the change of user (this thread only).
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) { *failed_step = ST_DROP_KEEPCAPS; goto fail; }
    gid_t group = gid;
    // glibc applies these to every thread of the process.
    if (setgroups(1, &group) != 0) { *failed_step = ST_DROP_GROUPS; goto fail; }
    if (setresgid(gid, gid, gid) != 0) { *failed_step = ST_DROP_GID; goto fail; }
    if (setresuid(uid, uid, uid) != 0) { *failed_step = ST_DROP_UID; goto fail; }
    // Only the kept capabilities, also inheritable and ambient so that `ip` run from here has them.
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {{0}};
    data[0].effective = keep;
    data[0].permitted = keep;
    data[0].inheritable = keep;
    if (syscall(SYS_capset, &header, data) != 0) { *failed_step = ST_DROP_CAPSET; goto fail; }
    for (int capability = 0; capability < 32; capability++) {
        if ((keep & (1u << capability)) == 0) continue;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, capability, 0, 0) != 0) { *failed_step = ST_DROP_AMBIENT; goto fail; }
    }
    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    // Regaining root must now be impossible.
    if (setresuid(0, 0, 0) == 0) { *failed_step = ST_DROP_VERIFY; errno = EPERM; goto fail; }
    return 0;
fail:
    *error = errno;
    return -1;
}
