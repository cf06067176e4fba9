/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cgroups the daemon knows, by id, kept across ticks so that their
 * files stay open. A refresh walks the tree: new cgroups are opened, removed
 * ones dropped, and a cgroup recreated under an old path is a new entry.
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
        CgroupSample samples[2];        /* the newest is samples[cur] */
        uint64_t sample_usec[2];
        uint8_t cur;
        uint8_t n_samples;              /* 0, 1 or 2 (2 means "two or more") */
        bool gone;                      /* found removed while sampling */
        bool hot;                       /* sampled every tick from kept files (governed); else now and then */
        uint64_t warm_until;            /* a cold cgroup that writes is sampled every pass until this pass */
        bool keeps;                     /* its files stay open between passes (within the fd budget) */
        uint64_t limits_pass;           /* the observer's pass when its limits were last read */
        bool seen;                      /* found by the refresh in progress */
        uint64_t found_usec;            /* CLOCK_MONOTONIC when it entered the table; 0: found by the
                                         * first walk (it was there before the daemon) */
        CgroupSignals signals;          /* between the last two samples */
        CgroupLimits limits;            /* as of the last rescan (hot) or sample (cold) */
} CgEntry;

/* The newest sample, or NULL before the first. */
static inline const CgroupSample *cg_entry_sample(const CgEntry *e) {
        return e->n_samples > 0 ? &e->samples[e->cur] : NULL;
}

typedef struct CgTable {
        CgEntry *entries;       /* sorted by cg->id */
        size_t n;
        size_t added, removed;  /* by the last refresh */
        unsigned walk_skipped;  /* subtrees the last refresh could not read */
        size_t unopened;        /* cgroups the last refresh could not open (out of fds) */
} CgTable;

int cgtable_refresh(CgTable *t, const CgRoot *root);
CgEntry *cgtable_find(CgTable *t, uint64_t id);
/* The index of the first entry whose id is id or more (t->n if none). */
size_t cgtable_lower_bound(const CgTable *t, uint64_t id);
void cgtable_clear(CgTable *t);
