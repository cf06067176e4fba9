/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "observer-scan.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cgfs-watch.h"
#include "cgparse.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

int observer_watch_fd(const Observer *o) {
        return o->watch_fd;
}

bool observer_watching(const Observer *o) {
        return o->watch_fd >= 0 && o->cgroups.unwatched == 0;
}

typedef struct Take {
        Observer *o;
        uint64_t now;
        size_t changes;
} Take;

static void remember_new(Observer *o, uint64_t id) {
        if (o->n_news < ELEMENTSOF(o->news))
                o->news[o->n_news++] = id;
        else
                o->news_lost = true;
}

/* One cgroup of a new subtree: added, sampled once, and sampled at the next two passes (rates). */
static int add_one(const char *path, uint64_t id, void *userdata) {
        Take *x = userdata;
        Observer *o = x->o;
        CgEntry *e = cgtable_find(&o->cgroups, id);
        int r;

        if (e && !e->gone && streq(e->cg->path, path))
                return 0;
        r = cgtable_add(&o->cgroups, o->root, path, &e);
        if (r == -ENOMEM)
                return r;
        if (r == -EMFILE || r == -ENFILE) {
                /* Found again by a walk once fds are free. */
                o->out_of_fds++;
                o->rewalk = true;
                return 0;
        }
        if (r <= 0)
                return 0;
        x->changes++;
        o->events_added++;
        observer_warm(o, e);
        /* A cgroup still being made (a fixture's files come after its mkdir) reads as gone: checked again
         * at the next rescan. */
        r = x->now ? observer_sample_entry(o, e, x->now) : 0;
        if (r == -ENOMEM)
                return r;
        remember_new(o, id);
        return 0;
}

/* A directory made below a watched one: it and whatever was made below it before its watch was. */
static int take_added(Take *x, const char *path) {
        unsigned skipped = 0;
        int r = cg_root_walk_below(x->o->root, path, add_one, x, &skipped);

        if (skipped > 0)
                x->o->rewalk = true;
        return r == -ENOMEM ? r : 0;
}

/* A directory removed below a watched one: its entry dropped, unless the path holds it still (the
 * event is older than a walk that found a new cgroup there: that one stays). */
static void take_removed(Take *x, const char *path) {
        Observer *o = x->o;
        CgEntry *e = cgtable_find_path(&o->cgroups, path);

        if (!e)
                return;
        if (!e->gone && cgroup_attach(o->root, e->cg) == 0 && !cgroup_gone(e->cg)) {
                if (!e->keeps)
                        cgroup_detach(e->cg);
                return;
        }
        observer_drop(o, e, true);
        x->changes++;
        o->events_removed++;
}

static int on_change(CgChange what, int wd, const char *name, void *userdata) {
        Take *x = userdata;
        Observer *o = x->o;
        char path[PATH_MAX];
        CgEntry *parent;

        if (what == CG_CHANGE_LOST) {
                log_debug("The inotify queue of cgroup directories overflowed: the next rescan walks the tree");
                o->rewalk = true;
                return 0;
        }
        parent = cgtable_find_watch(&o->cgroups, wd);
        if (!parent)
                return 0;
        if (what == CG_CHANGE_MOVED) {
                /* Renamed: the paths below it are stale. */
                o->rewalk = true;
                return 0;
        }
        if (what == CG_CHANGE_GONE) {
                observer_drop(o, parent, true);
                x->changes++;
                o->events_removed++;
                return 0;
        }
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", streq(parent->cg->path, "/") ? "" : parent->cg->path,
                              name) >= sizeof(path))
                return 0;
        if (what == CG_CHANGE_ADDED)
                return take_added(x, path);
        take_removed(x, path);
        return 0;
}

int observer_take_events(Observer *o, uint64_t now_usec) {
        Take x = { .o = o, .now = now_usec };
        int r;

        if (o->watch_fd < 0)
                return 0;
        r = cg_watch_read(o->watch_fd, OBSERVER_EVENTS_MAX, on_change, &x);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_debug_errno(r, "Cannot read the events of cgroup directories: %m");
        return (int) MIN(x.changes, (size_t) INT32_MAX);
}

size_t observer_recheck_gone(Observer *o) {
        size_t changed = 0;

        if (!o->gone_since_walk)
                return 0;
        o->gone_since_walk = false;
        for (size_t i = o->cgroups.n; i > 0; i--) {
                CgEntry *e = &o->cgroups.entries[i - 1];
                int r;

                if (!e->gone)
                        continue;
                r = cgroup_path_holds(o->root, e->cg);
                if (r < 0) {
                        o->gone_since_walk = true;      /* out of fds: looked at again */
                        continue;
                }
                if (r == 0) {
                        observer_drop(o, e, false);
                        changed++;
                        continue;
                }
                /* Its path leads to it still: back, unless it lacks cgroup.procs (a fixture's cgroup
                 * being made; cgroupfs makes one whole): then looked at again. */
                if (cgroup_attach(o->root, e->cg) < 0 || cgroup_gone(e->cg)) {
                        if (!e->keeps)
                                cgroup_detach(e->cg);
                        o->gone_since_walk = true;
                        continue;
                }
                cgtable_set_gone(&o->cgroups, e, false);
                e->n_samples = 0;
                if (!e->keeps)
                        cgroup_detach(e->cg);
                observer_warm(o, e);
                changed++;
        }
        return changed;
}

/* nr_descendants from the root's cgroup.stat; UINT64_MAX if it cannot be read (then every rescan walks). */
static uint64_t root_descendants(const Observer *o) {
        _cleanup_close_ int fd = -1;
        char buf[4096], *p;     /* since 6.11 it lists every controller's counts too */
        uint64_t v;

        if (kept_read(o->root->fd, "cgroup.stat", &fd, buf, sizeof(buf), NULL) < 0 ||
            !(p = strstr(buf, "nr_descendants ")) || cg_parse_u64(p + 15, strcspn(p + 15, "\n"), &v) < 0)
                return UINT64_MAX;
        return v;
}

/* Whether the tree may have changed since the last walk in a way the events did not tell. */
/*
 * With every directory watched, the root's count of descendants is checked
 * against the table at each rescan (one read): a count the events do not
 * explain, and that changed since the last walk, means events went missing.
 * The safety net's walk is skipped too when the counts agree.
 */
static const char *watched_walk_needed(Observer *o, uint64_t d, uint64_t now) {
        uint64_t known = o->cgroups.n > 0 ? o->cgroups.n - 1 : 0;
        bool agree = d != UINT64_MAX && d == known;

        /* A cgroup made or removed since the events were taken: taken again, counted again. */
        if (!agree && d != UINT64_MAX && observer_take_events(o, 0) > 0) {
                d = root_descendants(o);
                known = o->cgroups.n > 0 ? o->cgroups.n - 1 : 0;
                agree = d == known;
        }

        if (!agree && d != o->descendants) {
                o->descendants = d;
                return "the count of descendants differs from what the events told";
        }
        if (now < o->walked_usec + OBSERVER_WALK_WATCHED_USEC)
                return NULL;
        if (agree) {
                o->walked_usec = now;
                return NULL;
        }
        return "the safety net's interval";
}

static const char *walk_needed(Observer *o, uint64_t now) {
        uint64_t d;

        if (o->walks == 0)
                return "the first walk";
        if (o->rewalk)
                return "events lost, a directory moved, or the last walk incomplete";
        d = root_descendants(o);
        if (observer_watching(o))
                return watched_walk_needed(o, d, now);
        if (d == UINT64_MAX || d != o->descendants) {
                o->descendants = d;
                return "not every directory watched, and the count of descendants changed or is unknown";
        }
        if (o->gone_since_walk)
                return "not every directory watched, and a cgroup found removed";
        return now >= o->walked_usec + OBSERVER_WALK_MAX_USEC ? "not every directory watched, a minute" : NULL;
}

/* The swap areas' disks, followed by devstat from the next pass on; the last list kept if unreadable. */
static void rescan_swaps(Observer *o) {
        SwapDisk disks[SWAPS_MAX];
        size_t unknown = 0;
        int r = swaps_disks(o->host, disks, ELEMENTSOF(disks), &unknown);

        if (r < 0) {
                log_debug_errno(r, "Cannot read the swap areas (%s/swaps): %m", o->host->proc_path);
                return;
        }
        if ((size_t) r != o->n_swap_disks || memcmp(disks, o->swap_disks, (size_t) r * sizeof(SwapDisk)) != 0) {
                char list[SWAPS_MAX * 24] = "";

                for (int i = 0; i < r; i++)
                        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%u:%u", i ? ", " : "",
                                 disks[i].major, disks[i].minor);
                if (r > 0)
                        log_info("Swap is on disk%s %s: while %s congested, reclaims that may swap are held back",
                                 r == 1 ? "" : "s", list, r == 1 ? "it is" : "one is");
                else if (o->n_swap_disks > 0)
                        log_info("No swap area on a known disk any more");
        }
        memcpy(o->swap_disks, disks, (size_t) r * sizeof(SwapDisk));
        o->n_swap_disks = (size_t) r;
        if (unknown != o->swap_unknown && unknown > 0)
                log_info("%zu swap area%s on no disk found below %s: reclaims that may swap are not held back "
                         "when %s busy", unknown, unknown == 1 ? " is" : "s are", o->host->sys_path,
                         unknown == 1 ? "it is" : "they are");
        o->swap_unknown = unknown;
}

int observer_rescan(Observer *o) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        const char *why;
        int r;

        /* What the events say first (what they add is sampled with the next pass), up to a bound (the loop
         * takes the rest of a burst); a cgroup a sample found removed is checked alone, when they tell all. */
        for (int i = 0; i < OBSERVER_RESCAN_EVENTS_MAX / OBSERVER_EVENTS_MAX; i++) {
                r = observer_take_events(o, 0);
                if (r == -ENOMEM)
                        return r;
                if (r <= 0)
                        break;
        }
        if (observer_watching(o) && !o->rewalk)
                (void) observer_recheck_gone(o);
        r = 0;
        why = walk_needed(o, now);
        if (why) {
                o->rewalk = false;
                r = cgtable_refresh(&o->cgroups, o->root);
                log_debug("Walked the tree under %s (%s): %zu cgroups, %zu new, %zu removed", o->root->path, why,
                          o->cgroups.n, o->cgroups.added, o->cgroups.removed);
                o->walked_usec = now;
                o->walks++;
                o->gone_since_walk = false;
                /* An incomplete walk (failed, a subtree unreadable, cgroups not opened) is done again. */
                if (r < 0 || o->cgroups.walk_skipped > 0 || o->cgroups.unopened > 0) {
                        o->descendants = UINT64_MAX;
                        o->rewalk = true;
                }
                /* Removed cgroups took their share of the budget with them. */
                o->n_kept = 0;
                for (size_t i = 0; i < o->cgroups.n; i++)
                        o->n_kept += o->cgroups.entries[i].keeps;
                observer_every_rebuild(o);
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_warning_errno(r, "Scanning cgroups under %s failed, keeping the last view: %m", o->root->path);
        /* The governed cgroups' limits, and the first of new ones; a cold cgroup's come with its samples
         * (no entry but these is touched). */
        for (size_t i = 0; i < o->n_every; i++) {
                CgEntry *e = cgtable_find(&o->cgroups, o->every[i]);

                if (!e || (!e->hot && e->limits.have != 0))
                        continue;
                cgroup_forget_absent(e->cg);
                observer_read_limits(o, e);
        }
        r = metadata_discover(o->host, &o->metadata);
        if (r < 0)
                log_debug_errno(r, "Cannot list filesystems for metadata figures: %m");
        rescan_swaps(o);
        return 0;
}

