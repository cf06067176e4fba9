/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "procs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Enough for the pids of any cgroup the daemon writes back (a read bound, not a limit on the kernel). */
#define PROCS_READ_MAX 65536

int cg_read_procs(int dirfd, pid_t *pids, size_t max) {
        _cleanup_close_ int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_free_ char *buf = NULL;
        size_t n = 0;
        ssize_t len;
        char *p, *end;

        if (fd < 0)
                return negative_errno();
        buf = malloc(PROCS_READ_MAX);
        if (!buf)
                return -ENOMEM;
        len = read(fd, buf, PROCS_READ_MAX - 1);
        if (len < 0)
                return negative_errno();
        buf[len] = '\0';
        for (p = buf; *p && n < max; p = end) {
                unsigned long pid = strtoul(p, &end, 10);

                if (end == p)
                        break;
                pids[n++] = (pid_t) pid;
                while (*end == '\n')
                        end++;
        }
        return (int) n;
}

bool proc_fd_writable(int fdinfo_dirfd, const char *name) {
        _cleanup_close_ int fd = openat(fdinfo_dirfd, name, O_RDONLY | O_CLOEXEC);
        char buf[256], *p;
        unsigned long flags;
        ssize_t n;

        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        p = strstr(buf, "flags:");
        if (!p || sscanf(p + 6, "%lo", &flags) != 1)
                return false;
        return (flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR;
}
