/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cgfs-watch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "util.h"

/* What a cgroup directory's watch reports: directories made, removed or renamed below it, and its own end. */
#define CG_WATCH_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | \
                       IN_ONLYDIR)

int cg_watch_open(void) {
        int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

        return fd < 0 ? negative_errno() : fd;
}

int cgroup_watch_dir(const Cgroup *cg, int watch_fd) {
        char path[64];
        int wd;

        if (cg->dirfd < 0)
                return -EBADF;
        /* inotify takes a path: the directory this layer opened, through the process's own fd (the magic
         * link is followed to it, and nothing below the root is looked up again by name). */
        snprintf(path, sizeof(path), "/proc/self/fd/%d", cg->dirfd);
        wd = inotify_add_watch(watch_fd, path, CG_WATCH_MASK);
        return wd < 0 ? negative_errno() : wd;
}

void cg_watch_forget(int watch_fd, int wd) {
        if (watch_fd >= 0 && wd >= 0)
                (void) inotify_rm_watch(watch_fd, wd);
}

/* One event as a change, or -1 for one of no interest (a file, the watch's own IN_IGNORED after a removal). */
static int change_of(const struct inotify_event *ev) {
        if (ev->mask & IN_Q_OVERFLOW)
                return CG_CHANGE_LOST;
        if (ev->mask & IN_MOVE_SELF)
                return CG_CHANGE_MOVED;
        if (ev->mask & (IN_DELETE_SELF | IN_IGNORED))
                return CG_CHANGE_GONE;
        if (!(ev->mask & IN_ISDIR) || ev->len == 0)
                return -1;
        if (ev->mask & (IN_CREATE | IN_MOVED_TO))
                return CG_CHANGE_ADDED;
        if (ev->mask & (IN_DELETE | IN_MOVED_FROM))
                return CG_CHANGE_REMOVED;
        return -1;
}

int cg_watch_read(int watch_fd, size_t max_events, CgChangeFn fn, void *userdata) {
        /* Room for a few dozen events with short names, and one with the longest (a read returns whole
         * events only): what one read takes in is handed over whole. */
        char buf[1024] __attribute__((aligned(__alignof__(struct inotify_event))));
        size_t handed = 0;

        while (handed < max_events) {
                ssize_t n = read(watch_fd, buf, sizeof(buf));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? (int) MIN(handed, (size_t) INT32_MAX) : negative_errno();
                for (ssize_t off = 0; off + (ssize_t) sizeof(struct inotify_event) <= n;) {
                        const struct inotify_event *ev = (const struct inotify_event *) (buf + off);
                        int what = change_of(ev), r;

                        off += (ssize_t) (sizeof(struct inotify_event) + ev->len);
                        if (what < 0)
                                continue;
                        r = fn((CgChange) what, what == CG_CHANGE_LOST ? -1 : ev->wd, ev->len ? ev->name : "",
                               userdata);
                        if (r < 0)
                                return r;
                        handed++;
                }
        }
        return (int) MIN(handed, (size_t) INT32_MAX);
}
