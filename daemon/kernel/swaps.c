/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "swaps.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "blkqueue.h"
#include "fileio.h"
#include "util.h"

/* One whitespace-separated field at *p into out (at most size - 1 bytes, octal escapes undone); false if none. */
static bool next_field(const char **p, char *out, size_t size) {
        const char *s = *p;
        size_t n = 0;

        while (*s == ' ' || *s == '\t')
                s++;
        if (*s == '\0' || *s == '\n')
                return false;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
                char c = *s++;

                if (c == '\\' && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' &&
                    s[2] <= '7') {
                        c = (char) ((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
                        s += 3;
                }
                if (n + 1 < size)
                        out[n++] = c;
        }
        out[n] = '\0';
        *p = s;
        return true;
}

static bool all_digits(const char *s, bool sign) {
        if (sign && *s == '-')
                s++;
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

int swaps_parse(const char *text, SwapArea *areas, size_t max) {
        const char *line = text;
        size_t n = 0;

        if (strncmp(text, "Filename", 8) != 0)
                return -EBADMSG;
        line = strchr(text, '\n');
        while (line && *++line) {
                char f[5][SWAP_PATH_MAX], rest[8];
                const char *p = line;

                for (size_t i = 0; i < 5; i++)
                        if (!next_field(&p, f[i], sizeof(f[i])))
                                return -EBADMSG;
                if (next_field(&p, rest, sizeof(rest)) || !all_digits(f[2], false) || !all_digits(f[3], false) ||
                    !all_digits(f[4], true))
                        return -EBADMSG;
                if (n < max) {
                        snprintf(areas[n].path, sizeof(areas[n].path), "%s", f[0]);
                        areas[n].partition = streq(f[1], "partition");
                }
                n++;
                line = strchr(line, '\n');
        }
        return (int) MIN(n, (size_t) INT32_MAX);
}

static void add_disk(SwapDisk *disks, size_t *n, size_t max, uint32_t major, uint32_t minor) {
        for (size_t j = 0; j < *n; j++)
                if (disks[j].major == major && disks[j].minor == minor)
                        return;
        if (*n < max)
                disks[(*n)++] = (SwapDisk) { .major = major, .minor = minor };
}

/* Adds the disk of the block device major:minor; false if /sys has no queue for it. */
static bool add_device(HostRoot *h, SwapDisk *disks, size_t *n, size_t max, uint32_t major, uint32_t minor) {
        BlkQueue q;

        if (blkqueue_open(h->sys_fd, major, minor, &q) < 0)
                return false;
        add_disk(disks, n, max, q.major, q.minor);
        blkqueue_close(&q);
        return true;
}

int swaps_btrfs_disks(HostRoot *h, const char *fsid, SwapDisk *disks, size_t *n, size_t max) {
        char rel[96];
        struct dirent *de;
        bool found = false;
        DIR *d;

        if (strlen(fsid) != 36 || strspn(fsid, "0123456789abcdef-") != 36)
                return -EINVAL;
        snprintf(rel, sizeof(rel), "fs/btrfs/%s/devices", fsid);
        d = opendir_at(h->sys_fd, rel);
        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                _cleanup_close_ int fd = -1;
                char path[sizeof(rel) + 80], buf[32];
                unsigned maj, min;

                if (de->d_name[0] == '.' || strlen(de->d_name) > 64)
                        continue;
                snprintf(path, sizeof(path), "%s/%s/dev", rel, de->d_name);
                if (kept_read(h->sys_fd, path, &fd, buf, sizeof(buf), NULL) >= 0 &&
                    sscanf(buf, "%u:%u", &maj, &min) == 2 && add_device(h, disks, n, max, maj, min))
                        found = true;
        }
        closedir(d);
        return found ? 0 : -ENOENT;
}

/*
 * The fsid of the btrfs filesystem the file `path` is on, as /sys/fs/btrfs
 * names it. Its files show an anonymous device (each subvolume another), so
 * stat() cannot say which disks hold them. -ENOTTY: not on btrfs.
 */
static int btrfs_fsid_of(const char *path, char *ret, size_t size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct btrfs_ioctl_fs_info_args info = {};
        const uint8_t *u = info.fsid;
        struct statfs sfs;

        if (fd < 0)
                return negative_errno();
        if (fstatfs(fd, &sfs) < 0)
                return negative_errno();
        if (sfs.f_type != BTRFS_SUPER_MAGIC)
                return -ENOTTY;
        if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) < 0)
                return negative_errno();
        snprintf(ret, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
        return 0;
}

/* The device an area is on: by its name (a partition), or its file's stat() (major 0: anonymous). */
static int area_device(HostRoot *h, const SwapArea *a, uint32_t *ret_major, uint32_t *ret_minor) {
        struct stat st;

        if (a->partition) {
                _cleanup_close_ int fd = -1;
                const char *name = strrchr(a->path, '/');
                char rel[96], buf[32];
                unsigned maj, min;

                /* The kernel's block device names are short (32 bytes at most). */
                name = name ? name + 1 : a->path;
                if (!*name || strlen(name) > 64 || streq(name, ".") || streq(name, ".."))
                        return -EINVAL;
                snprintf(rel, sizeof(rel), "class/block/%.64s/dev", name);
                if (kept_read(h->sys_fd, rel, &fd, buf, sizeof(buf), NULL) < 0 ||
                    sscanf(buf, "%u:%u", &maj, &min) != 2)
                        return -ENOENT;
                *ret_major = maj;
                *ret_minor = min;
                return 0;
        }
        if (stat(a->path, &st) < 0)
                return -errno;
        *ret_major = major(st.st_dev);
        *ret_minor = minor(st.st_dev);
        return 0;
}

/*
 * Adds the disks an area is on. A partition (or zram, dm) is named by the
 * kernel's name for it ("/dev/sda2", "/dev/dm-1"), which /sys/class/block
 * knows: the daemon's own /dev may be private (PrivateDevices=). A file is
 * on its filesystem's device, as stat() says, or on btrfs on every disk of
 * the filesystem. Returns 0 if it found one.
 */
static int area_disks(HostRoot *h, const SwapArea *a, SwapDisk *disks, size_t *n, size_t max) {
        uint32_t maj = 0, min = 0;
        char fsid[40];
        int r = area_device(h, a, &maj, &min);

        if (r < 0)
                return r;
        if (maj != 0)
                return add_device(h, disks, n, max, maj, min) ? 0 : -ENOENT;
        if (a->partition)
                return -ENOENT;
        r = btrfs_fsid_of(a->path, fsid, sizeof(fsid));
        return r < 0 ? r : swaps_btrfs_disks(h, fsid, disks, n, max);
}

int swaps_disks(HostRoot *h, SwapDisk *disks, size_t max, size_t *ret_unknown) {
        _cleanup_close_ int fd = -1;
        SwapArea areas[SWAPS_MAX];
        char buf[4096];
        size_t n = 0, unknown = 0;
        int r, k;

        /* One page holds the header and a dozen areas; a longer file is refused (-EFBIG), not cut. */
        r = kept_read(h->proc_fd, "swaps", &fd, buf, sizeof(buf), NULL);
        if (r < 0)
                return r;
        k = swaps_parse(buf, areas, ELEMENTSOF(areas));
        if (k < 0)
                return k;
        if ((size_t) k > ELEMENTSOF(areas))
                unknown += (size_t) k - ELEMENTSOF(areas);
        for (size_t i = 0; i < MIN((size_t) k, ELEMENTSOF(areas)); i++)
                if (h->sys_fd < 0 || area_disks(h, &areas[i], disks, &n, max) < 0)
                        unknown++;
        if (ret_unknown)
                *ret_unknown = unknown;
        return (int) n;
}
