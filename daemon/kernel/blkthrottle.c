/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "blkthrottle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgfs.h"
#include "fileio.h"
#include "util.h"

/* Devices whose queue may hold requests for good (a loop file on a hung mount, an nbd server gone),
 * so that the kernel's freeze would never end; none of them is a disk a writer is capped on. */
static bool skipped_kind(const char *name) {
        static const char *const prefixes[] = { "loop", "nbd", "sr", "ram", "zram", "fd" };

        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
                if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

/* MAJ:MIN of block/NAME below sys_fd, for a disk with sectors. */
static bool disk_numbers(int sys_fd, const char *name, uint32_t *major, uint32_t *minor) {
        _cleanup_close_ int fd = -1, sfd = -1;
        char path[300], buf[64];
        unsigned long long size;

        snprintf(path, sizeof(path), "block/%s/dev", name);
        if (kept_read(sys_fd, path, &fd, buf, sizeof(buf), NULL) < 0 ||
            sscanf(buf, "%" SCNu32 ":%" SCNu32, major, minor) != 2)
                return false;
        snprintf(path, sizeof(path), "block/%s/size", name);
        return kept_read(sys_fd, path, &sfd, buf, sizeof(buf), NULL) >= 0 && sscanf(buf, "%llu", &size) == 1 &&
               size > 0;
}

/* The daemon's own cgroup (`own`, "/a/b"; not the root) when its io.max can be written: an fd of it. */
static int open_own(int root_fd, const char *own) {
        int fd;

        if (!own || !own[0] || streq(own, "/"))
                return -ENOENT;
        fd = openat(root_fd, own + (own[0] == '/'), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (faccessat(fd, "io.max", W_OK, 0) < 0) {
                close(fd);
                return -EOPNOTSUPP;
        }
        return fd;
}

int blkthrottle_prime(int sys_fd, int root_fd, const char *own, bool (*stop)(void), BlkThrottlePrimed *ret) {
        BlkThrottlePrimed p = {};
        _cleanup_close_ int target_fd = -1;
        bool made = false;
        struct dirent *de;
        DIR *d = NULL;
        int r = 0;

        /* The daemon's own cgroup first: the writes show the disks in its io.stat from then on
         * (without figures), and that cgroup is nobody else's. Under its unit that is the way: the
         * root's directory is 0555, and the unit keeps no CAP_DAC_OVERRIDE to make a cgroup there. */
        target_fd = open_own(root_fd, own);
        if (target_fd >= 0)
                snprintf(p.target, sizeof(p.target), "%s", own + (own[0] == '/'));
        else {
                /* Else one of its own below the root, for the moment of the writes. One name, so that
                 * what a killed run left is taken over and removed by the next. */
                snprintf(p.target, sizeof(p.target), "%s", BLKTHROTTLE_CGROUP);
                if (mkdirat(root_fd, p.target, 0755) < 0 && errno != EEXIST) {
                        r = negative_errno();
                        p.target[0] = '\0';
                        goto out;
                }
                made = true;
                target_fd = openat(root_fd, p.target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (target_fd < 0)
                        r = negative_errno();
                else if (faccessat(target_fd, "io.max", W_OK, 0) < 0)
                        r = -EOPNOTSUPP;        /* the io controller is not enabled below the root */
        }
        if (r >= 0 && !(d = opendir_at(sys_fd, "block")))
                r = negative_errno();
        while (d && (de = readdir(d)) && p.written + p.failed < BLKTHROTTLE_DISKS_MAX && !(stop && stop())) {
                uint32_t major, minor;
                char line[48];
                uint64_t began, took;

                if (de->d_name[0] == '.' || skipped_kind(de->d_name) || !disk_numbers(sys_fd, de->d_name, &major, &minor))
                        continue;
                snprintf(line, sizeof(line), "%" PRIu32 ":%" PRIu32 " wbps=max", major, minor);
                began = now_usec(CLOCK_MONOTONIC);
                if (cg_dir_write(target_fd, "io.max", line) < 0) {
                        p.failed++;
                        continue;
                }
                took = now_usec(CLOCK_MONOTONIC) - began;
                if (p.written++ == 0 || took > p.slowest_usec) {
                        p.slowest_usec = took;
                        p.slowest_major = major;
                        p.slowest_minor = minor;
                }
        }
        if (d)
                closedir(d);
        closep(&target_fd);
        /* The readiness stays with the disk, not with the cgroup. */
        p.removed = !made || unlinkat(root_fd, p.target, AT_REMOVEDIR) >= 0;
out:
        *ret = p;
        return r;
}
