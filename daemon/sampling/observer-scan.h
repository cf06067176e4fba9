/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How the observer finds cgroups: by events first (mkdir and rmdir as
 * inotify reports them on every watched cgroup directory, cgfs-watch.h), a
 * cgroup a sample found removed checked alone, and a walk of the tree only
 * at the start, when events were lost or a watch refused, and as a safety
 * net (observer.h says when). A rescan also rereads the governed cgroups'
 * limits, the filesystems and the swap areas.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "observer.h"

/* Finds new and removed cgroups, reads every cgroup's limits and the swap areas' disks. */
int observer_rescan(Observer *o);

/* The inotify fd to poll for POLLIN (then observer_take_events), or -1: cgroups are found by walks only. */
int observer_watch_fd(const Observer *o);

/*
 * Takes the queued events (at most OBSERVER_EVENTS_MAX; poll again for the
 * rest): a new cgroup, and any below it, is opened, watched, sampled once at
 * now_usec (with 0: at the next pass, as a walk's finds are) and put in news;
 * a removed one dropped. Returns how many cgroups were added or dropped, or
 * -ENOMEM. CgEntry pointers taken before may move.
 */
int observer_take_events(Observer *o, uint64_t now_usec);

/* Whether every cgroup directory is watched: walks are then a safety net only. */
bool observer_watching(const Observer *o);


/*
 * The cgroups a sample found removed (if any was), each checked alone, no
 * walk: dropped if their path holds no cgroup of their id, sampled again at
 * the next pass if it does (one that lacked cgroup.procs for a moment, as a
 * fixture's cgroup does while its files are made). Returns how many were
 * dropped or taken back.
 */
size_t observer_recheck_gone(Observer *o);
