/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The filesystems the daemon knows by type: those it reads dirty metadata
 * of, and those [WritePoint] IOLatencyTargetByFilesystem= names. A plain
 * type kept here so that configuration and sampling share it.
 */
#pragma once

typedef enum FsType {
        FS_EXT4,
        FS_XFS,
        FS_BTRFS,
        _FS_TYPE_MAX,
} FsType;

/* "ext4", "xfs", "btrfs"; NULL past the end. */
const char *fs_type_to_string(FsType t);
/* The type named s exactly, or -EINVAL. */
int fs_type_from_string(const char *s);
