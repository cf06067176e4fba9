/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Who holds the host's dirty data that no cgroup in view does: a search
 * down the tree, not a sweep of every cgroup. memory.stat counts a cgroup's
 * descendants' pages, so from the root down only the children of the
 * cgroups holding enough are read, each level's dirtiest few followed: a
 * few dozen reads on a host of thousands of cgroups. Each cgroup found is
 * sampled now and warmed (sampled every pass for a while), so that the
 * tick that searched sees it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "observer.h"

#define DIRTY_SEARCH_READS_MAX 512      /* cgroups sampled by one search at most */

typedef struct DirtySearch {
        size_t reads;                   /* cgroups sampled */
        size_t found;                   /* ... holding min_bytes or more */
        unsigned depth;                 /* levels gone down */
} DirtySearch;

/* Returns 1 if any cgroup below the root holds min_bytes of dirty data or more, 0 if none, -ENOMEM. */
int dirty_search(Observer *o, uint64_t min_bytes, uint64_t now, DirtySearch *ret);
