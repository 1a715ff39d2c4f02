// glibc's malloc options, which Swift cannot reach: <malloc.h> is not in the Glibc module.
#include "CTUNShims.h"

#include <malloc.h>

int st_tune_malloc(int mmap_threshold, int trim_threshold, int top_pad) {
    return mallopt(M_MMAP_THRESHOLD, mmap_threshold)
        && mallopt(M_TRIM_THRESHOLD, trim_threshold)
        && mallopt(M_TOP_PAD, top_pad);
}

int st_malloc_trim(void) {
    return malloc_trim(0);
}
