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

typedef struct Policy Policy;

typedef struct CgEntry {
        Cgroup *cg;
        const Policy *policy;   /* set by the manager; NULL: no policy */
        CgroupSample sample;
        bool sampled;
        bool seen;              /* found by the refresh in progress */
} CgEntry;

typedef struct CgTable {
        CgEntry *entries;       /* sorted by cg->id */
        size_t n;
        size_t added, removed;  /* by the last refresh */
} CgTable;

int cgtable_refresh(CgTable *t, const CgRoot *root);
CgEntry *cgtable_find(CgTable *t, uint64_t id);
void cgtable_clear(CgTable *t);
