/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int kept_read(int dirfd, const char *name, int *fd, char *buf, size_t size, size_t *ret_len) {
        ssize_t n;

        if (size < 2)
                return -EINVAL;
        if (*fd < 0) {
                *fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
                if (*fd < 0)
                        return negative_errno();
        }
        /* Kernel interface files produce their whole content in one read. */
        n = pread(*fd, buf, size - 1, 0);
        if (n < 0) {
                int r = negative_errno();
                closep(fd);
                return r;
        }
        if ((size_t) n == size - 1)
                return -EFBIG;
        buf[n] = '\0';
        if (ret_len)
                *ret_len = (size_t) n;
        return 0;
}

int psi_trigger_open(int dirfd, const char *name, const char *spec) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        size_t len = strlen(spec) + 1; /* the kernel takes the terminating NUL too */
        struct statfs sfs;
        ssize_t n;

        if (fd < 0)
                return negative_errno();
        /* Only the kernel's own pressure files take triggers; never write a
         * trigger spec into an ordinary file (a fixture tree, a wrong root). */
        if (fstatfs(fd, &sfs) < 0)
                return negative_errno();
        if (sfs.f_type != PROC_SUPER_MAGIC && sfs.f_type != CGROUP2_SUPER_MAGIC)
                return -EOPNOTSUPP;
        n = write(fd, spec, len);
        if (n < 0)
                return negative_errno();
        if ((size_t) n != len)
                return -EIO;
        return TAKE_FD(fd);
}

DIR *opendir_at(int dirfd, const char *rel) {
        int fd = openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d;

        if (fd < 0)
                return NULL;
        d = fdopendir(fd);
        if (!d) {
                int e = errno;

                close(fd);
                errno = e;
        }
        return d;
}
