/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cgroups the daemon knows, by id, kept across ticks so that their
 * files stay open. A refresh walks the tree: new cgroups are opened, removed
 * ones dropped, and a cgroup recreated under an old path is a new entry.
 * With a watch fd (cgfs-watch.h) every directory opened is watched, so that
 * cgroups are added and dropped one by one as the events tell, between walks.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cgfs.h"
#include "sampler.h"
#include "derived.h"

typedef struct Policy Policy;

typedef struct CgEntry {
        Cgroup *cg;
        const char *unit;               /* into cg->path; NULL if not a unit's cgroup */
        const Policy *policy;           /* set by the manager; NULL: no policy */
        CgroupSample sample;            /* the newest (the one before it lives on in the signals) */
        uint64_t sample_usec;
        uint64_t warm_until;            /* a cold cgroup that writes is sampled every pass until this pass */
        uint64_t limits_pass;           /* the observer's pass when its limits were last read */
        uint64_t found_usec;            /* CLOCK_MONOTONIC when it entered the table; 0: found by the
                                         * first walk (it was there before the daemon) */
        CgroupSignals signals;          /* between the last two samples */
        CgroupLimits limits;            /* as of the last rescan (hot) or sample (cold) */
        int wd;                         /* its directory's inotify watch; -1: none */
        uint32_t path_hash;             /* of cg->path, for the table's index by path */
        uint32_t unit_hash;             /* of unit (when it has one), for the index by unit */
        uint8_t n_samples;              /* 0, 1 or 2 (2 means "two or more") */
        bool gone;                      /* found removed while sampling */
        bool hot;                       /* sampled every tick from kept files (governed); else now and then */
        bool keeps;                     /* its files stay open between passes (within the fd budget) */
        bool seen;                      /* found by the refresh in progress */
} CgEntry;

/* The newest sample, or NULL before the first. */
static inline const CgroupSample *cg_entry_sample(const CgEntry *e) {
        return e->n_samples > 0 ? &e->sample : NULL;
}

/* Ids by a hash of a name, open addressing (0: empty); size a power of two, at least twice the entries,
 * 0: not built. */
typedef struct CgIndex {
        uint64_t *slots;
        size_t size;
} CgIndex;

/* Which entry a watch descriptor is of. */
typedef struct CgWatchRef {
        int wd;
        uint64_t id;
} CgWatchRef;

typedef struct CgTable {
        CgEntry *entries;       /* sorted by cg->id */
        size_t n;
        size_t added, removed;  /* by the last refresh */
        size_t n_gone;          /* entries found removed, not yet dropped (cgtable_set_gone()) */
        unsigned walk_skipped;  /* subtrees the last refresh could not read */
        size_t unopened;        /* cgroups the last refresh could not open (out of fds) */
        bool watched;           /* entries are watched on watch_fd (not owned); a zeroed table is not */
        int watch_fd;
        CgWatchRef *watches;    /* sorted by wd */
        size_t n_watches, n_watches_alloc;
        size_t unwatched;       /* directories whose watch was refused (fs.inotify.max_user_watches) */
        CgIndex by_path;        /* for events, which name paths, and lookups by path */
        CgIndex by_unit;        /* for lookups by unit name (entries that have one) */
} CgTable;

/* An empty table whose entries are watched on watch_fd (negative: not watched). */
void cgtable_init(CgTable *t, int watch_fd);
int cgtable_refresh(CgTable *t, const CgRoot *root);
CgEntry *cgtable_find(const CgTable *t, uint64_t id);
/* The entry at this path, or NULL (two can share it for a moment: a removed one not yet dropped). */
CgEntry *cgtable_find_path(CgTable *t, const char *path);
/*
 * The entries at a path (name starting with '/') or of a unit name, through
 * the indexes: `*cursor` starts at 0; the next match (gone ones too), or
 * NULL after the last. The table must not change in between.
 */
CgEntry *cgtable_next_named(const CgTable *t, const char *name, size_t *cursor);
/* The entry whose directory has this watch, or NULL. */
CgEntry *cgtable_find_watch(CgTable *t, int wd);
/*
 * Opens the cgroup at `path` and adds it (watched, detached), unless the
 * table has it already. Returns 1 and the new entry, 0 and the one there (NULL
 * for a path that is no cgroup any more: removed meanwhile), or a negative
 * errno (-ENOMEM, -EMFILE). An entry of the same id under another path (a
 * rename) is replaced. Pointers to other entries may move.
 */
int cgtable_add(CgTable *t, const CgRoot *root, const char *path, CgEntry **ret);
/* Drops the entry at index i: its watch, its fds, its slot (dir_gone: its directory is known removed;
 * the watch is removed all the same, see entry_release()). */
void cgtable_remove_at(CgTable *t, size_t i, bool dir_gone);
/* Marks an entry found removed, or not after all; the table counts them. */
void cgtable_set_gone(CgTable *t, CgEntry *e, bool gone);
/* The cgroups watched: the entries not found removed. */
static inline size_t cgtable_live(const CgTable *t) {
        return t->n - t->n_gone;
}
/* The index of the first entry whose id is id or more (t->n if none). */
size_t cgtable_lower_bound(const CgTable *t, uint64_t id);
void cgtable_clear(CgTable *t);
