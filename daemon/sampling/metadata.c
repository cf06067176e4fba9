/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "metadata.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgparse.h"
#include "blkqueue.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

static void fs_close(FsMetadata *f) {
        closep(&f->fd_a);
        closep(&f->fd_b);
}

void metadata_view_clear(MetadataView *v) {
        for (size_t i = 0; i < v->n; i++)
                fs_close(&v->fs[i]);
        v->n = 0;
}

/* "cycle:block", optionally followed by a newline. */
int metadata_parse_xfs_lsn(const char *s, uint64_t *ret_cycle, uint64_t *ret_block) {
        char *end;

        if (*s < '0' || *s > '9')
                return -EBADMSG;
        errno = 0;
        *ret_cycle = strtoull(s, &end, 10);
        if (errno || *end != ':' || end[1] < '0' || end[1] > '9')
                return -EBADMSG;
        *ret_block = strtoull(end + 1, &end, 10);
        if (errno || (*end != '\0' && !(*end == '\n' && end[1] == '\0')))
                return -EBADMSG;
        return 0;
}

int metadata_parse_jbd2_logged(const char *buf, uint64_t *ret_blocks) {
        const char *p = strstr(buf, " logged blocks per transaction");
        const char *start;
        uint64_t v = 0;

        if (!p)
                return -EBADMSG;
        for (start = p; start > buf && start[-1] >= '0' && start[-1] <= '9'; start--)
                ;
        /* 18 digits cannot overflow 64 bits. */
        if (start == p || p - start > 18)
                return -EBADMSG;
        for (; start < p; start++)
                v = v * 10 + (uint64_t) (*start - '0');
        *ret_blocks = v;
        return 0;
}

/* The kernel name of block device M:m, from /sys/dev/block/M:m/uevent. */
static int device_name(HostRoot *h, uint32_t major, uint32_t minor, char *buf, size_t size) {
        char path[64], content[512];
        int fd = -1, r;
        const char *p;
        size_t len;

        snprintf(path, sizeof(path), "dev/block/%" PRIu32 ":%" PRIu32 "/uevent", major, minor);
        r = kept_read(h->sys_fd, path, &fd, content, sizeof(content), &len);
        closep(&fd);
        if (r < 0)
                return r;
        p = strstr(content, "DEVNAME=");
        if (!p)
                return -EBADMSG;
        p += 8;
        len = strcspn(p, "\n");
        if (len == 0 || len >= size)
                return -EBADMSG;
        memcpy(buf, p, len);
        buf[len] = '\0';
        return 0;
}

/* For btrfs, the mount's major:minor is anonymous: find the fsid whose
 * devices/ holds `dev` and the real block device numbers from sysfs. */
static int btrfs_resolve(HostRoot *h, const char *dev, FsMetadata *f) {
        DIR *d = opendir_at(h->sys_fd, "fs/btrfs");
        struct dirent *de;
        int r = -ENOENT;

        if (!d)
                return negative_errno();
        while ((de = readdir(d)) && r < 0) {
                char path[PATH_MAX], devno[32];
                int fd = -1;
                size_t len;
                unsigned maj, min;

                if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(f->fsid) ||
                    strlen(de->d_name) + strlen(dev) + 32 > sizeof(path))
                        continue;
                snprintf(path, sizeof(path), "fs/btrfs/%s/devices/%s/dev", de->d_name, dev);
                if (kept_read(h->sys_fd, path, &fd, devno, sizeof(devno), &len) < 0) {
                        closep(&fd);
                        continue;
                }
                closep(&fd);
                if (sscanf(devno, "%u:%u", &maj, &min) != 2)
                        continue;
                f->major = maj;
                f->minor = min;
                strcpy(f->fsid, de->d_name);
                r = 0;
        }
        closedir(d);
        return r;
}

static FsMetadata *view_find(MetadataView *v, FsType t, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < v->n; i++)
                if (v->fs[i].type == t && v->fs[i].major == major && v->fs[i].minor == minor)
                        return &v->fs[i];
        return NULL;
}

/* One mountinfo line: "ID PARENT M:m ROOT MOUNTPOINT OPTS [OPTIONAL...] - TYPE SOURCE SUPEROPTS". */
static void discover_line(HostRoot *h, MetadataView *v, char *line) {
        char *sep = strstr(line, " - "), type[32], source[256];
        unsigned maj, min;
        FsMetadata nf = { .fd_a = -1, .fd_b = -1, .block_size = 4096 }, *f;
        int t = -1;

        if (!sep || sscanf(line, "%*u %*u %u:%u", &maj, &min) != 2 ||
            sscanf(sep + 3, "%31s %255s", type, source) != 2)
                return;
        t = fs_type_from_string(type);
        if (t < 0)
                return;
        nf.type = (FsType) t;
        nf.major = maj;
        nf.minor = min;
        if (nf.type == FS_BTRFS) {
                const char *base = strrchr(source, '/');
                base = base ? base + 1 : source;
                if (strlen(base) >= sizeof(nf.device) || btrfs_resolve(h, base, &nf) < 0)
                        return;
                memcpy(nf.device, base, strlen(base) + 1);
        } else if (device_name(h, nf.major, nf.minor, nf.device, sizeof(nf.device)) < 0)
                return;

        f = view_find(v, nf.type, nf.major, nf.minor);
        if (f) {
                f->seen = true;   /* mounted twice (bind mounts) or still mounted */
                return;
        }
        if (v->n >= METADATA_FS_MAX) {
                if (!v->overflow_logged)
                        log_notice("More than %d ext4/xfs/btrfs filesystems; metadata of the others is not watched",
                                   METADATA_FS_MAX);
                v->overflow_logged = true;
                return;
        }
        /* io.stat names the disk, whatever partition the filesystem is on. */
        if (blkdev_disk_of(h->sys_fd, nf.major, nf.minor, &nf.disk_major, &nf.disk_minor) < 0) {
                nf.disk_major = nf.major;
                nf.disk_minor = nf.minor;
        }
        nf.seen = true;
        v->fs[v->n++] = nf;
        log_debug("Watching %s metadata on %s (%u:%u)", type, nf.device, maj, min);
}

int metadata_discover(HostRoot *h, MetadataView *v) {
        _cleanup_close_ int fd = -1;
        _cleanup_fclose_ FILE *f = NULL;
        char line[1024];
        size_t kept = 0;

        if (h->sys_fd < 0)
                return -ENOENT;
        fd = openat(h->proc_fd, "self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        f = fdopen(TAKE_FD(fd), "re");
        if (!f)
                return negative_errno();
        for (size_t i = 0; i < v->n; i++)
                v->fs[i].seen = false;
        while (fgets(line, sizeof(line), f))
                discover_line(h, v, line);
        /* Unmounted since the last rescan: dropped. */
        for (size_t i = 0; i < v->n; i++) {
                if (v->fs[i].seen) {
                        v->fs[kept++] = v->fs[i];
                        continue;
                }
                fs_close(&v->fs[i]);
        }
        v->n = kept;
        return 0;
}

static int read_kept(int dirfd, const char *path, int *fd, char *buf, size_t size) {
        return kept_read(dirfd, path, fd, buf, size, NULL);
}

static void sample_xfs(HostRoot *h, FsMetadata *f) {
        char path[96], head[64], tail[64];
        uint64_t hc, hb, tc, tb;

        snprintf(path, sizeof(path), "fs/xfs/%s/log/log_head_lsn", f->device);
        if (read_kept(h->sys_fd, path, &f->fd_a, head, sizeof(head)) < 0)
                return;
        snprintf(path, sizeof(path), "fs/xfs/%s/log/log_tail_lsn", f->device);
        if (read_kept(h->sys_fd, path, &f->fd_b, tail, sizeof(tail)) < 0)
                return;
        if (metadata_parse_xfs_lsn(head, &hc, &hb) < 0 || metadata_parse_xfs_lsn(tail, &tc, &tb) < 0)
                return;
        /* Within one cycle the distance is exact; across a wrap the log size
         * would be needed, which sysfs does not give: no figure then. */
        if (hc != tc || hb < tb)
                return;
        f->pending_bytes = (hb - tb) * 512;
        f->have_pending = true;
}

static void sample_btrfs(HostRoot *h, FsMetadata *f) {
        char path[128], buf[64];
        uint64_t v;

        snprintf(path, sizeof(path), "fs/btrfs/%s/allocation/metadata/bytes_may_use", f->fsid);
        if (read_kept(h->sys_fd, path, &f->fd_a, buf, sizeof(buf)) < 0 ||
            cg_parse_u64(buf, strlen(buf), &v) < 0)
                return;
        f->pending_bytes = v;
        f->have_pending = true;
}

static void sample_ext4(HostRoot *h, FsMetadata *f) {
        char path[96], buf[2048];
        uint64_t blocks;

        snprintf(path, sizeof(path), "fs/jbd2/%s-8/info", f->device);
        if (read_kept(h->proc_fd, path, &f->fd_a, buf, sizeof(buf)) < 0 ||
            metadata_parse_jbd2_logged(buf, &blocks) < 0)
                return;
        f->pending_bytes = blocks * f->block_size;
        f->have_pending = true;
}

void metadata_sample(HostRoot *h, MetadataView *v) {
        for (size_t i = 0; i < v->n; i++) {
                FsMetadata *f = &v->fs[i];

                f->have_pending = false;
                switch (f->type) {
                case FS_XFS:
                        sample_xfs(h, f);
                        break;
                case FS_BTRFS:
                        sample_btrfs(h, f);
                        break;
                case FS_EXT4:
                        sample_ext4(h, f);
                        break;
                default:
                        break;
                }
        }
}

bool metadata_attribute(const MetadataView *v, const DevStatTable *devices, const CgroupSignals *s,
                        uint64_t *ret_bytes) {
        uint64_t total = 0;
        bool have = false;

        if (!s->valid)
                return false;
        for (size_t d = 0; d < s->n_devices; d++)
                for (size_t i = 0; i < v->n; i++) {
                        const FsMetadata *f = &v->fs[i];
                        const DevStat *ds;
                        uint64_t w = s->devices[d].wbytes_per_sec, share_ppm, completed;

                        if (f->disk_major != s->devices[d].major || f->disk_minor != s->devices[d].minor ||
                            !f->have_pending || w == 0)
                                continue;
                        ds = devstat_find((DevStatTable *) devices, f->disk_major, f->disk_minor);
                        completed = ds ? ds->write_rate : 0;
                        share_ppm = completed > 0 ? MIN(w * 1000000 / completed, UINT64_C(1000000)) : 1000000;
                        total += f->pending_bytes / 1000000 * share_ppm +
                                 f->pending_bytes % 1000000 * share_ppm / 1000000;
                        have = true;
                }
        *ret_bytes = total;
        return have;
}
