/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "blkqueue.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgfs.h"
#include "fileio.h"
#include "util.h"

static const char *const knob_files[_QUEUE_KNOB_MAX] = {
        [QUEUE_NR_REQUESTS] = "nr_requests",
        [QUEUE_MAX_SECTORS_KB] = "max_sectors_kb",
};

const char *queue_knob_file(QueueKnob k) {
        return k < _QUEUE_KNOB_MAX ? knob_files[k] : NULL;
}

/* "MAJ:MIN" in the disk's dev file; the numbers asked for if it cannot be read. */
static void disk_numbers(int disk_fd, BlkQueue *q) {
        _cleanup_close_ int fd = -1;
        char buf[32];
        unsigned maj, min;

        if (kept_read(disk_fd, "dev", &fd, buf, sizeof(buf), NULL) >= 0 && sscanf(buf, "%u:%u", &maj, &min) == 2) {
                q->major = maj;
                q->minor = min;
        }
}

/* DEVNAME= of the uevent file `rel` below dir_fd into buf; "MAJ:MIN" if it has none. */
static void uevent_name(int dir_fd, const char *rel, uint32_t major, uint32_t minor, char *buf, size_t size) {
        _cleanup_close_ int fd = -1;
        char text[512];
        const char *p;
        size_t len = 0;

        if (dir_fd >= 0 && kept_read(dir_fd, rel, &fd, text, sizeof(text), NULL) >= 0 &&
            (p = strstr(text, "DEVNAME=")) && (len = strcspn(p + 8, "\n")) > 0 && len < size) {
                memcpy(buf, p + 8, len);
                buf[len] = '\0';
        } else
                snprintf(buf, size, "%" PRIu32 ":%" PRIu32, major, minor);
}

static void disk_name(int disk_fd, BlkQueue *q) {
        uevent_name(disk_fd, "uevent", q->major, q->minor, q->name, sizeof(q->name));
}

void blkdev_name(int sys_fd, uint32_t major, uint32_t minor, char *buf, size_t size) {
        char rel[64];

        snprintf(rel, sizeof(rel), "dev/block/%" PRIu32 ":%" PRIu32 "/uevent", major, minor);
        uevent_name(sys_fd, rel, major, minor, buf, size);
}

/* The directory of block device major:minor's disk below sys_fd: its own, or its parent's for a partition. */
static int open_disk_dir(int sys_fd, uint32_t major, uint32_t minor) {
        _cleanup_close_ int dev_fd = -1;
        char path[64];
        int fd;

        if (sys_fd < 0)
                return -ENOENT;
        /* /sys/dev/block/M:m is a link to the device's directory: followed. */
        snprintf(path, sizeof(path), "dev/block/%" PRIu32 ":%" PRIu32, major, minor);
        dev_fd = openat(sys_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dev_fd < 0)
                return negative_errno();
        /* A partition's directory sits inside its disk's, and holds a "partition" file. */
        if (faccessat(dev_fd, "partition", F_OK, 0) < 0)
                return TAKE_FD(dev_fd);
        fd = openat(dev_fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

int blkqueue_open(int sys_fd, uint32_t major, uint32_t minor, BlkQueue *ret) {
        _cleanup_close_ int disk_fd = open_disk_dir(sys_fd, major, minor);
        int fd;

        if (disk_fd < 0)
                return disk_fd;
        fd = openat(disk_fd, "queue", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret = (BlkQueue) { .fd = fd, .major = major, .minor = minor };
        disk_numbers(disk_fd, ret);
        disk_name(disk_fd, ret);
        return 0;
}

int blkdev_disk_of(int sys_fd, uint32_t major, uint32_t minor, uint32_t *ret_major, uint32_t *ret_minor) {
        _cleanup_close_ int disk_fd = open_disk_dir(sys_fd, major, minor);
        BlkQueue q = { .major = major, .minor = minor };

        if (disk_fd < 0)
                return disk_fd;
        disk_numbers(disk_fd, &q);
        *ret_major = q.major;
        *ret_minor = q.minor;
        return 0;
}

void blkqueue_close(BlkQueue *q) {
        closep(&q->fd);
}

int blkqueue_read(int queue_fd, QueueKnob k, uint64_t *ret) {
        if (k >= _QUEUE_KNOB_MAX)
                return -EINVAL;
        return cg_dir_read_u64(queue_fd, knob_files[k], ret);
}

int blkqueue_write(int queue_fd, QueueKnob k, uint64_t value) {
        char buf[32];

        if (k >= _QUEUE_KNOB_MAX)
                return -EINVAL;
        snprintf(buf, sizeof(buf), "%" PRIu64, value);
        return cg_dir_write(queue_fd, knob_files[k], buf);
}
