/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fs-type.h"

#include <errno.h>
#include <string.h>

static const char *const fs_type_names[_FS_TYPE_MAX] = {
        [FS_EXT4] = "ext4",
        [FS_XFS] = "xfs",
        [FS_BTRFS] = "btrfs",
};

const char *fs_type_to_string(FsType t) {
        return (unsigned) t < _FS_TYPE_MAX ? fs_type_names[t] : NULL;
}

int fs_type_from_string(const char *s) {
        for (int i = 0; i < _FS_TYPE_MAX; i++)
                if (strcmp(s, fs_type_names[i]) == 0)
                        return i;
        return -EINVAL;
}
