/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "new-file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int new_file_at(int dfd, const char *name, mode_t mode, FILE **ret) {
        _cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                                        mode);
        FILE *f;

        if (fd < 0)
                return negative_errno();
        f = fdopen(fd, "w");
        if (!f)
                return negative_errno();
        TAKE_FD(fd);
        *ret = f;
        return 0;
}

static int write_synced(int dfd, const char *name, mode_t mode, int (*write)(FILE *f, void *userdata),
                        void *userdata) {
        _cleanup_fclose_ FILE *f = NULL;
        int r = new_file_at(dfd, name, mode, &f);

        if (r < 0)
                return r;
        r = write(f, userdata);
        if (r < 0)
                return r;
        /* The mode asked for, whatever the umask: the metrics textfile is read by another user. */
        if (fflush(f) != 0 || fchmod(fileno(f), mode) < 0 || fsync(fileno(f)) < 0)
                return negative_errno();
        return fclose(TAKE_PTR(f)) != 0 ? negative_errno() : 0;
}

int file_replace(const char *path, mode_t mode, int (*write)(FILE *f, void *userdata), void *userdata) {
        _cleanup_free_ char *dir = NULL, *tmp = NULL;
        _cleanup_close_ int dfd = -1;
        const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
        int r;

        dir = slash ? strndup(path, MAX((size_t) (slash - path), (size_t) 1)) : strdup(".");
        if (!dir || asprintf(&tmp, "%s.tmp", base) < 0)
                return -ENOMEM;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
                return negative_errno();
        r = write_synced(dfd, tmp, mode, write, userdata);
        if (r >= 0 && renameat(dfd, tmp, dfd, base) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        return fsync(dfd) < 0 ? negative_errno() : 0;
}
