/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cgtable.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cgfs-watch.h"
#include "log.h"
#include "unit-name.h"
#include "util.h"

typedef struct Refresh {
        CgTable *t;
        const CgRoot *root;
        CgEntry *added;         /* opened during this walk, merged at its end */
        size_t n_added;
        size_t n_alloc;         /* room in `added`: it grows by half again, not one by one */
        size_t out_of_fds;      /* cgroups that could not be opened for lack of descriptors */
} Refresh;

static int entry_cmp(const void *a, const void *b) {
        uint64_t x = ((const CgEntry *) a)->cg->id, y = ((const CgEntry *) b)->cg->id;
        return x < y ? -1 : x > y;
}

size_t cgtable_lower_bound(const CgTable *t, uint64_t id) {
        size_t lo = 0, hi = t->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->entries[mid].cg->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

CgEntry *cgtable_find(const CgTable *t, uint64_t id) {
        size_t i = cgtable_lower_bound(t, id);

        return i < t->n && t->entries[i].cg->id == id ? &t->entries[i] : NULL;
}

void cgtable_init(CgTable *t, int watch_fd) {
        *t = (CgTable) { .watched = watch_fd >= 0, .watch_fd = watch_fd };
}

static size_t watch_lower_bound(const CgTable *t, int wd) {
        size_t lo = 0, hi = t->n_watches;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->watches[mid].wd < wd)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

CgEntry *cgtable_find_watch(CgTable *t, int wd) {
        size_t i = watch_lower_bound(t, wd);

        return i < t->n_watches && t->watches[i].wd == wd ? cgtable_find(t, t->watches[i].id) : NULL;
}

static uint32_t path_hash(const char *p) {
        uint32_t h = 2166136261u;

        for (; *p; p++)
                h = (h ^ (uint8_t) *p) * 16777619u;
        return h;
}

/* An entry's unit and the hashes the indexes file it under, from its path. */
static void entry_names(CgEntry *e) {
        e->unit = cgroup_path_unit(e->cg->path);
        e->path_hash = path_hash(e->cg->path);
        e->unit_hash = e->unit ? path_hash(e->unit) : 0;
}

/* The two indexes: by path (every entry) and by unit name (entries that have one). */
enum { BY_PATH, BY_UNIT };

static CgIndex *index_of(CgTable *t, int which) {
        return which == BY_PATH ? &t->by_path : &t->by_unit;
}

/* Whether an entry is in the index, and under which hash. */
static bool indexed(const CgEntry *e, int which, uint32_t *ret_hash) {
        *ret_hash = which == BY_PATH ? e->path_hash : e->unit_hash;
        return which == BY_PATH || e->unit;
}

/* An index made afresh for every entry, with room for twice as many. */
static int index_rebuild(CgTable *t, int which) {
        CgIndex *x = index_of(t, which);
        size_t size = 64;
        uint64_t *slots;

        while (size < 2 * (t->n + 1))
                size *= 2;
        slots = calloc(size, sizeof(uint64_t));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++) {
                uint32_t h;
                size_t k;

                if (!indexed(&t->entries[i], which, &h))
                        continue;
                for (k = h & (size - 1); slots[k]; k = (k + 1) & (size - 1))
                        ;
                slots[k] = t->entries[i].cg->id;
        }
        free(x->slots);
        *x = (CgIndex) { .slots = slots, .size = size };
        return 0;
}

static int indexes_rebuild(CgTable *t) {
        int r = index_rebuild(t, BY_PATH);

        return r < 0 ? r : index_rebuild(t, BY_UNIT);
}

/* Indexes an entry already in the table. */
static int index_put(CgTable *t, int which, const CgEntry *e) {
        CgIndex *x = index_of(t, which);
        uint32_t h;
        size_t k;

        if (!indexed(e, which, &h))
                return 0;
        if (2 * t->n > x->size)
                return index_rebuild(t, which);
        for (k = h & (x->size - 1); x->slots[k]; k = (k + 1) & (x->size - 1))
                ;
        x->slots[k] = e->cg->id;
        return 0;
}

/* Unindexes an entry still in the table: its slot emptied, the slots after it moved up where they may. */
static void index_drop(CgTable *t, int which, const CgEntry *e) {
        CgIndex *x = index_of(t, which);
        size_t mask = x->size - 1, j, k;
        uint32_t h;

        if (!x->slots || !indexed(e, which, &h))
                return;
        for (j = h & mask; x->slots[j] != e->cg->id; j = (j + 1) & mask)
                if (!x->slots[j])
                        return;
        for (k = (j + 1) & mask; x->slots[k]; k = (k + 1) & mask) {
                const CgEntry *o = cgtable_find(t, x->slots[k]);
                uint32_t oh = 0;
                size_t home = o && indexed(o, which, &oh) ? oh & mask : k;

                if (((k - home) & mask) >= ((k - j) & mask)) {
                        x->slots[j] = x->slots[k];
                        j = k;
                }
        }
        x->slots[j] = 0;
}

void cgtable_set_gone(CgTable *t, CgEntry *e, bool gone) {
        if (e->gone != gone)
                t->n_gone = gone ? t->n_gone + 1 : t->n_gone - 1;
        e->gone = gone;
}

CgEntry *cgtable_next_named(const CgTable *t, const char *name, size_t *cursor) {
        int which = name[0] == '/' ? BY_PATH : BY_UNIT;
        const CgIndex *x = which == BY_PATH ? &t->by_path : &t->by_unit;
        uint32_t h = path_hash(name);
        size_t mask = x->size - 1;

        if (!x->slots)
                return NULL;
        /* The cursor counts the slots of the probe already looked at. */
        for (size_t k = (h + *cursor) & mask; *cursor <= mask && x->slots[k]; k = (k + 1) & mask) {
                CgEntry *e = cgtable_find(t, x->slots[k]);
                uint32_t eh;

                (*cursor)++;
                if (e && indexed(e, which, &eh) && eh == h &&
                    streq(which == BY_PATH ? e->cg->path : e->unit, name))
                        return e;
        }
        return NULL;
}

CgEntry *cgtable_find_path(CgTable *t, const char *path) {
        size_t cursor = 0;

        return path[0] == '/' ? cgtable_next_named(t, path, &cursor) : NULL;
}

/* Remembers whose watch wd is (a directory watched again keeps its wd: the entry is the newer one). */
static int watch_put(CgTable *t, int wd, uint64_t id) {
        size_t i = watch_lower_bound(t, wd);

        if (i < t->n_watches && t->watches[i].wd == wd) {
                t->watches[i].id = id;
                return 0;
        }
        if (t->n_watches == t->n_watches_alloc) {
                size_t want = MAX(t->n_watches_alloc + t->n_watches_alloc / 2, (size_t) 64);
                CgWatchRef *n = reallocarray(t->watches, want, sizeof(CgWatchRef));

                if (!n)
                        return -ENOMEM;
                t->watches = n;
                t->n_watches_alloc = want;
        }
        memmove(t->watches + i + 1, t->watches + i, (t->n_watches - i) * sizeof(CgWatchRef));
        t->watches[i] = (CgWatchRef) { .wd = wd, .id = id };
        t->n_watches++;
        return 0;
}

/* Forgets whose watch wd is, if it is still this entry's (a directory watched again for a newer entry
 * keeps its wd): whether it was. */
static bool watch_drop(CgTable *t, int wd, uint64_t id) {
        size_t i = watch_lower_bound(t, wd);

        if (i >= t->n_watches || t->watches[i].wd != wd || t->watches[i].id != id)
                return false;
        memmove(t->watches + i, t->watches + i + 1, (t->n_watches - i - 1) * sizeof(CgWatchRef));
        t->n_watches--;
        return true;
}

/* Watches a cgroup just opened (its directory attached); one refused is counted, said once per new count. */
static int watch_entry(CgTable *t, CgEntry *e) {
        int wd;

        e->wd = -1;
        if (!t->watched)
                return 0;
        wd = cgroup_watch_dir(e->cg, t->watch_fd);
        if (wd == -ENOSPC || wd == -ENOMEM) {
                if (t->unwatched++ == 0)
                        log_warning("inotify refused to watch %s (fs.inotify.max_user_watches reached?): new "
                                    "cgroups are found by walks of the tree instead, every rescan", e->cg->path);
                return 0;
        }
        if (wd < 0) {
                log_debug_errno(wd, "%s: cannot watch: %m", e->cg->path);
                t->unwatched++;
                return 0;
        }
        e->wd = wd;
        return watch_put(t, wd, e->cg->id);
}

/*
 * What an entry holds, let go: its watch, its fds, its Cgroup. The watch of a
 * removed directory is removed too: cgroupfs (6.1) does not end it at the
 * rmdir (no IN_IGNORED came in the VM), and a watch left counts against
 * fs.inotify.max_user_watches until the kernel lets the inode go.
 */
static void entry_release(CgTable *t, CgEntry *e, bool dir_gone) {
        (void) dir_gone;
        if (e->wd >= 0) {
                if (watch_drop(t, e->wd, e->cg->id) && t->watched)
                        cg_watch_forget(t->watch_fd, e->wd);
        } else if (t->unwatched > 0 && t->watched)
                t->unwatched--;
        cgroup_free(e->cg);
        e->cg = NULL;
        sample_done(&e->sample);
        signals_done(&e->signals);
}

static int refresh_one(const char *path, uint64_t id, void *userdata) {
        Refresh *rf = userdata;
        CgEntry *e = cgtable_find(rf->t, id), *n;
        Cgroup *cg;
        int r;

        if (e && streq(e->cg->path, path) && !e->gone) {
                e->seen = true;
                return 0;
        }
        /* New, an id reused under another path (renamed: treat as new), or one
         * taken for removed that is still there (it lacked cgroup.procs for a
         * moment): opened afresh, the old entry dropped. */
        r = cgroup_open(rf->root, path, &cg);
        if (r == -ENOENT || r == -ENODEV)
                return 0;
        if (r == -ENOMEM)
                return r;
        if (r == -EMFILE || r == -ENFILE) {
                rf->out_of_fds++;
                return 0;
        }
        if (r < 0) {
                log_debug_errno(r, "%s: cannot open: %m", path);
                return 0;
        }
        if (rf->n_added == rf->n_alloc) {
                size_t want = MAX(rf->n_alloc + rf->n_alloc / 2, (size_t) 64);

                n = reallocarray(rf->added, want, sizeof(CgEntry));
                if (!n) {
                        cgroup_free(cg);
                        return -ENOMEM;
                }
                rf->added = n;
                rf->n_alloc = want;
        }
        n = &rf->added[rf->n_added++];
        *n = (CgEntry) { .cg = cg, .seen = true, .found_usec = rf->t->n > 0 ? now_usec(CLOCK_MONOTONIC) : 0 };
        entry_names(n);
        r = watch_entry(rf->t, n);
        /* Held open only while it is sampled every tick (observer.h). */
        cgroup_detach(cg);
        return r;
}

/* Drops unseen entries, appends the new ones, sorts once. */
static int refresh_merge(Refresh *rf) {
        CgTable *t = rf->t;
        size_t kept = 0;
        CgEntry *n;

        for (size_t i = 0; i < t->n; i++) {
                if (!t->entries[i].seen) {
                        t->n_gone -= t->entries[i].gone;
                        entry_release(t, &t->entries[i], t->entries[i].gone);
                        t->removed++;
                        continue;
                }
                t->entries[kept++] = t->entries[i];
        }
        t->n = kept;
        if (rf->n_added == 0)
                return 0;
        if (t->n == 0) {
                /* The first scan (or everything replaced): the new entries become
                 * the table as they are, never copied, so that the peak is one table. */
                free(t->entries);
                /* Its spare room given back; should the shrink fail, the larger block serves as well. */
                n = realloc(rf->added, rf->n_added * sizeof(CgEntry));
                t->entries = n ?: rf->added;
                rf->added = NULL;
                t->n = t->added = rf->n_added;
                rf->n_added = rf->n_alloc = 0;
                qsort(t->entries, t->n, sizeof(CgEntry), entry_cmp);
                return 0;
        }
        n = realloc(t->entries, (t->n + rf->n_added) * sizeof(CgEntry));
        if (!n)
                return -ENOMEM;
        t->entries = n;
        memcpy(t->entries + t->n, rf->added, rf->n_added * sizeof(CgEntry));
        t->n += rf->n_added;
        t->added = rf->n_added;
        rf->n_added = 0;
        qsort(t->entries, t->n, sizeof(CgEntry), entry_cmp);
        return 0;
}

int cgtable_refresh(CgTable *t, const CgRoot *root) {
        Refresh rf = { .t = t, .root = root };
        unsigned skipped = 0;
        int r;

        t->added = t->removed = 0;
        for (size_t i = 0; i < t->n; i++)
                t->entries[i].seen = false;
        r = cg_root_walk_full(root, refresh_one, &rf, &skipped);
        if (r < 0 || skipped > 0)
                /* The walk failed or could not read a subtree: keep what we had rather than drop it,
                 * but for cgroups found removed already. */
                for (size_t i = 0; i < t->n; i++)
                        t->entries[i].seen |= !t->entries[i].gone;
        if (r >= 0)
                r = refresh_merge(&rf);
        if (r >= 0 && (t->added > 0 || t->removed > 0 || !t->by_path.slots || !t->by_unit.slots))
                r = indexes_rebuild(t);
        if (skipped != t->walk_skipped && skipped > 0)
                log_warning("%u subtrees below %s could not be read (out of file descriptors, or no access); "
                            "their cgroups are not watched", skipped, root->path);
        t->walk_skipped = skipped;
        for (size_t i = 0; i < rf.n_added; i++)
                entry_release(t, &rf.added[i], false);
        free(rf.added);
        if (rf.out_of_fds > 0 && rf.out_of_fds != t->unopened)
                log_warning("Out of file descriptors: %zu new cgroups could not be opened and are not watched; "
                            "raise LimitNOFILE= of the service", rf.out_of_fds);
        t->unopened = rf.out_of_fds;
        return r;
}

/* Where an entry of this id goes, the table grown by one for it. */
static int insert_at(CgTable *t, uint64_t id, CgEntry **ret) {
        size_t i = cgtable_lower_bound(t, id);
        CgEntry *n = realloc(t->entries, (t->n + 1) * sizeof(CgEntry));

        if (!n)
                return -ENOMEM;
        t->entries = n;
        memmove(t->entries + i + 1, t->entries + i, (t->n - i) * sizeof(CgEntry));
        t->n++;
        *ret = &t->entries[i];
        return 0;
}

int cgtable_add(CgTable *t, const CgRoot *root, const char *path, CgEntry **ret) {
        _cleanup_(cgroup_freep) Cgroup *cg = NULL;
        CgEntry *e;
        int r;

        *ret = NULL;
        r = cgroup_open(root, path, &cg);
        if (r == -ENOENT || r == -ENODEV || r == -ENOTDIR)
                return 0;
        if (r < 0)
                return r;
        e = cgtable_find(t, cg->id);
        if (e && streq(e->cg->path, path) && !e->gone) {
                *ret = e;
                return 0;
        }
        if (e)
                cgtable_remove_at(t, (size_t) (e - t->entries), false);
        r = insert_at(t, cg->id, &e);
        if (r < 0)
                return r;
        *e = (CgEntry) { .cg = TAKE_PTR(cg), .wd = -1, .found_usec = now_usec(CLOCK_MONOTONIC) };
        entry_names(e);
        r = index_put(t, BY_PATH, e);
        if (r >= 0)
                r = index_put(t, BY_UNIT, e);
        if (r >= 0)
                r = watch_entry(t, e);
        cgroup_detach(e->cg);
        *ret = e;
        return r < 0 ? r : 1;
}

void cgtable_remove_at(CgTable *t, size_t i, bool dir_gone) {
        if (i >= t->n)
                return;
        index_drop(t, BY_PATH, &t->entries[i]);
        index_drop(t, BY_UNIT, &t->entries[i]);
        t->n_gone -= t->entries[i].gone;
        entry_release(t, &t->entries[i], dir_gone);
        memmove(t->entries + i, t->entries + i + 1, (t->n - i - 1) * sizeof(CgEntry));
        t->n--;
        t->removed++;
}

void cgtable_clear(CgTable *t) {
        bool watched = t->watched;
        int fd = t->watch_fd;

        for (size_t i = 0; i < t->n; i++) {
                cgroup_free(t->entries[i].cg);
                sample_done(&t->entries[i].sample);
                signals_done(&t->entries[i].signals);
        }
        free(t->entries);
        free(t->watches);
        free(t->by_path.slots);
        free(t->by_unit.slots);
        *t = (CgTable) { .watched = watched, .watch_fd = fd };
}
