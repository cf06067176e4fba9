/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * New and removed cgroups as events: an inotify watch on each cgroup
 * directory. A mkdir below one raises IN_CREATE with IN_ISDIR, an rmdir
 * IN_DELETE, on cgroupfs as on the ordinary directories of a fixture tree;
 * the removed directory's own watch then reports IN_DELETE_SELF and
 * IN_IGNORED. What inotify cannot promise is said to the caller, who walks
 * the tree instead: a full queue (IN_Q_OVERFLOW loses events) and a watch
 * refused (-ENOSPC: fs.inotify.max_user_watches is reached).
 */
#pragma once

#include <stddef.h>

#include "cgfs.h"

typedef enum CgChange {
        CG_CHANGE_ADDED,        /* a directory `name` made (or moved in) below the directory of `wd` */
        CG_CHANGE_REMOVED,      /* ... removed (or moved out) */
        CG_CHANGE_GONE,         /* the directory of `wd` itself is gone; the watch with it */
        CG_CHANGE_MOVED,        /* the directory of `wd` itself was renamed (the paths below it change) */
        CG_CHANGE_LOST,         /* the queue overflowed: events were lost (wd -1) */
} CgChange;

/* A new inotify instance, non-blocking: its fd, or a negative errno. */
int cg_watch_open(void);

/*
 * Watches the cgroup's directory (it must be attached) for directories made
 * and removed below it: the watch descriptor, or a negative errno (-ENOSPC:
 * fs.inotify.max_user_watches reached).
 */
int cgroup_watch_dir(const Cgroup *cg, int watch_fd);

/* Stops watching a directory that is still there (a watch whose directory is gone went with it). */
void cg_watch_forget(int watch_fd, int wd);

/*
 * Hands the events queued on watch_fd to fn, and stops reading once
 * max_events have been handed over (the last read's batch is handed over
 * whole: what read() returned cannot go back), so that a burst is taken over
 * several calls and the loop is never held long. Returns how many were
 * handed over (0: none queued), a negative errno from read(), or fn's
 * negative return (the rest of that batch is then lost, as an overflow loses
 * events).
 */
typedef int (*CgChangeFn)(CgChange what, int wd, const char *name, void *userdata);
int cg_watch_read(int watch_fd, size_t max_events, CgChangeFn fn, void *userdata);
