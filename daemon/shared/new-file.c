/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "new-file.h"

#include <fcntl.h>

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
