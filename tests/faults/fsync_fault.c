/* An fsync-error fault for the harness (issue 26), preloaded into a gateway (LD_PRELOAD): while the
 * file named by FSYNC_FAULT_FILE exists, fsync() and fdatasync() fail with EIO without syncing, as
 * a failing device makes them fail. Built from this source at run time (tests/faults/fsync_fault.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static int failing(void) {
    const char *trigger = getenv("FSYNC_FAULT_FILE");
    return trigger != NULL && access(trigger, F_OK) == 0;
}

/* Fail while the trigger exists, else call the C library's own `name` (looked up once in *real). */
static int sync_or_fail(int fd, const char *name, int (**real)(int)) {
    if (failing()) {
        errno = EIO;
        return -1;
    }
    if (*real == NULL)
        *real = (int (*)(int))dlsym(RTLD_NEXT, name);
    return (*real)(fd);
}

int fsync(int fd) {
    static int (*real)(int);
    return sync_or_fail(fd, "fsync", &real);
}

int fdatasync(int fd) {
    static int (*real)(int);
    return sync_or_fail(fd, "fdatasync", &real);
}
