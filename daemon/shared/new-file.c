/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "new-file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
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

static int write_tmp(int dfd, const char *tmp, mode_t mode, bool sync, FileWriter write, void *userdata) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
                return negative_errno();
        r = new_file_at(dfd, tmp, mode, &f);
        if (r < 0)
                return r;
        r = write(f, userdata);
        if (r < 0)
                return r;
        /* The mode as asked, whatever the umask. */
        if (fflush(f) != 0 || fchmod(fileno(f), mode) < 0 || (sync && fsync(fileno(f)) < 0))
                return negative_errno();
        return fclose(TAKE_PTR(f)) != 0 ? negative_errno() : 0;
}

int replace_file(const char *dir, const char *name, const char *tmp, mode_t mode, bool sync, FileWriter write,
                 void *userdata) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r;

        if (dfd < 0)
                return negative_errno();
        r = write_tmp(dfd, tmp, mode, sync, write, userdata);
        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlinkat(dfd, tmp, 0);
        return r;
}
