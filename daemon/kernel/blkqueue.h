/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A block device's request queue in sysfs: how deep it is (nr_requests) and
 * how large one request may be (max_sectors_kb), found from the device's
 * MAJ:MIN below a sysfs root (the real /sys, or a fixture tree). A
 * partition has no queue of its own: its disk's is the one.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef enum QueueKnob {
        QUEUE_NR_REQUESTS,
        QUEUE_MAX_SECTORS_KB,
        _QUEUE_KNOB_MAX,
} QueueKnob;

/* "nr_requests", "max_sectors_kb". */
const char *queue_knob_file(QueueKnob k);

typedef struct BlkQueue {
        int fd;                         /* the queue/ directory */
        uint32_t major, minor;          /* the disk's (a partition's parent) */
        char name[32];                  /* the disk's kernel name ("vdb"), or "MAJ:MIN" if unknown */
} BlkQueue;

/*
 * Opens the queue of block device major:minor below sys_fd: dev/block/M:m,
 * or its parent disk for a partition. -ENOENT: no such device, or one
 * without a request queue.
 */
int blkqueue_open(int sys_fd, uint32_t major, uint32_t minor, BlkQueue *ret);
void blkqueue_close(BlkQueue *q);

/* The disk of block device major:minor (itself, or a partition's parent): the device io.stat and
 * blk-cgroup name. Its own numbers if the disk's dev file cannot be read; -ENOENT: no such device. */
int blkdev_disk_of(int sys_fd, uint32_t major, uint32_t minor, uint32_t *ret_major, uint32_t *ret_minor);

/* The kernel's name of block device major:minor below sys_fd ("vda", "sda1": DEVNAME= of its uevent) into
 * buf; "MAJ:MIN" when it cannot be read. */
void blkdev_name(int sys_fd, uint32_t major, uint32_t minor, char *buf, size_t size);

int blkqueue_read(int queue_fd, QueueKnob k, uint64_t *ret);
/* The kernel's error as it is: -EINVAL for a depth the device or its scheduler refuses. */
int blkqueue_write(int queue_fd, QueueKnob k, uint64_t value);
