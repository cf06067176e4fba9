/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Dirty filesystem metadata, per filesystem. Mainline keeps no per-cgroup
 * count of it, so each filesystem type has a provider that reads what the
 * kernel does expose, and the figure is attributed to cgroups by their share
 * of the writes completed on that filesystem's device. Every figure here is
 * an estimate and is labelled so wherever it is shown.
 *
 *   xfs    /sys/fs/xfs/DEV/log/log_{head,tail}_lsn: log written but not yet
 *          checkpointed to its home location (the AIL), in 512-byte blocks
 *   btrfs  /sys/fs/btrfs/FSID/allocation/metadata/bytes_may_use: metadata
 *          space reserved for changes not yet written
 *   ext4   /proc/fs/jbd2/DEV-8/info: logged blocks of an average transaction
 *          times the block size (the metadata a commit carries)
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "devstat.h"
#include "fs-type.h"
#include "hostfs.h"
#include "derived.h"

/* Bound on filesystems watched; more are ignored (and said so once). */
#define METADATA_FS_MAX 32

typedef struct FsMetadata {
        FsType type;
        uint32_t major, minor;          /* its block device (a partition's own numbers) */
        uint32_t disk_major, disk_minor; /* the disk io.stat names: the device, or a partition's parent */
        char device[32];                /* kernel name: vdb, dm-0 */
        char fsid[40];                  /* btrfs only */
        uint64_t block_size;            /* ext4 only */
        int fd_a, fd_b;                 /* provider files, kept open */
        bool seen;

        bool have_pending;
        uint64_t pending_bytes;         /* the provider's figure (estimate) */
} FsMetadata;

typedef struct MetadataView {
        FsMetadata fs[METADATA_FS_MAX];
        size_t n;
        bool overflow_logged;
} MetadataView;

void metadata_view_clear(MetadataView *v);

/* Finds mounted ext4, xfs and btrfs filesystems (at rescans). Filesystems
 * still mounted keep their open files and history. */
int metadata_discover(HostRoot *h, MetadataView *v);

/* Rereads every provider (each tick). */
void metadata_sample(HostRoot *h, MetadataView *v);

/*
 * A cgroup's share of dirty metadata: for each device it writes to, the
 * filesystem's pending figure times the cgroup's share of that device's
 * completed writes (capped at 1: io.stat counts at dispatch; filesystems on
 * partitions of one disk each count with the disk's writes). Returns false
 * when no figure applies (no writes, no provider).
 */
bool metadata_attribute(const MetadataView *v, const DevStatTable *devices, const CgroupSignals *s,
                        uint64_t *ret_bytes);

/* Parsers, exposed for tests. */
int metadata_parse_xfs_lsn(const char *s, uint64_t *ret_cycle, uint64_t *ret_block);
int metadata_parse_jbd2_logged(const char *buf, uint64_t *ret_blocks);
