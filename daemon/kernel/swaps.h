/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The active swap areas (/proc/swaps) and the disks they are on. A swap
 * partition is its own device; a swap file is on its filesystem's. Either
 * way the disk (a partition's parent) is what counts: its queue is where a
 * page written to swap waits, behind everyone else's writes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hostfs.h"

#define SWAPS_MAX 8
#define SWAP_PATH_MAX 256

typedef struct SwapArea {
        char path[SWAP_PATH_MAX];       /* unescaped ("\040" is a space in the file) */
        bool partition;                 /* "partition"; otherwise a file */
} SwapArea;

/*
 * Parses the text of /proc/swaps: its header line, then one line per area
 * ("PATH TYPE SIZE USED PRIORITY"). Fills at most `max` areas and returns
 * how many lines named one (more than `max` if some did not fit); -EBADMSG
 * for text without the header or with a line of another shape.
 */
int swaps_parse(const char *text, SwapArea *areas, size_t max);

typedef struct SwapDisk {
        uint32_t major, minor;          /* the disk's (a partition's parent) */
} SwapDisk;

/*
 * The disks of the active swap areas, each once, below the host's /sys.
 * Returns how many (0: swap off), or a negative errno if /proc/swaps cannot
 * be read or parsed. A file on btrfs (whose files show an anonymous device)
 * is on every disk of its filesystem. An area whose disk cannot be found
 * (one in a directory hidden from the daemon, as ProtectHome= hides /home;
 * a filesystem on no block device) is left out and, if `ret_unknown` is
 * given, counted there.
 */
int swaps_disks(HostRoot *h, SwapDisk *disks, size_t max, size_t *ret_unknown);

/*
 * Adds to disks[*n] (at most `max`) the disks of the btrfs filesystem
 * `fsid` ("01234567-89ab-cdef-0123-456789abcdef", its directory in
 * /sys/fs/btrfs), each once. -ENOENT if it lists none found below /sys.
 */
int swaps_btrfs_disks(HostRoot *h, const char *fsid, SwapDisk *disks, size_t *n, size_t max);
