/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * io.max's throttling readied on every disk while the daemon starts, before
 * it has a cap to write. Since Linux 6.9 the kernel sets that throttling up
 * for a disk at the first io.max write that names the disk, and freezes the
 * disk's queue to do it: the write returns once every request in flight has
 * completed, and no new one starts meanwhile. On an idle disk that is
 * nothing; on the saturated one a first cap is written for, it is seconds
 * (6.12 under qemu: 3.6 s, the daemon's loop held that long and the
 * protected service's own io with it). A write of "MAJ:MIN wbps=max", a
 * limit that limits nothing, done at start does it while the disks are idle
 * (at boot), or at least not in the middle of the daemon's work. On older
 * kernels, where the throttling is always there, it costs one write a disk.
 * The readiness is the disk's: it outlives the cgroup written through.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLKTHROTTLE_DISKS_MAX 64
#define BLKTHROTTLE_CGROUP "mdreclaimd-prime"

typedef struct BlkThrottlePrimed {
        size_t written;                 /* disks that got the write */
        size_t failed;                  /* disks whose write the kernel refused (or a stop cut short) */
        uint32_t slowest_major, slowest_minor;
        uint64_t slowest_usec;          /* the longest single write (of `written`) */
        bool removed;                   /* false: a cgroup made for the writes could not be removed */
        char target[256];               /* the cgroup written through, relative to the root ("": none) */
} BlkThrottlePrimed;

/*
 * Writes "MAJ:MIN wbps=max" into an io.max for every disk below sys_fd's
 * block/ (whole disks with a size; not loop, nbd, optical, ram, zram or
 * floppy devices, whose queue may hold requests for good; at most
 * BLKTHROTTLE_DISKS_MAX): the daemon's own cgroup's (`own`, relative to the
 * root `root_fd`, "/system.slice/mdreclaimd.service"; NULL or "/": none)
 * where it can be written, else a cgroup made for the moment below the root
 * (BLKTHROTTLE_CGROUP, or the one a killed run left) and removed after. A
 * cgroup the writes touch lists the disks in its io.stat from then on, so
 * nobody else's is used. It blocks for as long as the kernel's freezes
 * take: run it off the event loop, with `stop` (NULL: none) asked before
 * each disk. Returns -EOPNOTSUPP when the cgroup made has no io.max (the io
 * controller is not enabled below the root: nothing can be capped either),
 * the error of mkdir, open or readdir, otherwise 0; *ret says what was done
 * either way, the removal included.
 */
int blkthrottle_prime(int sys_fd, int root_fd, const char *own, bool (*stop)(void), BlkThrottlePrimed *ret);
