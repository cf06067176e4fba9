/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cgtable.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

CgEntry *cgtable_find(CgTable *t, uint64_t id) {
        size_t i = cgtable_lower_bound(t, id);

        return i < t->n && t->entries[i].cg->id == id ? &t->entries[i] : NULL;
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
        /* Held open only while it is sampled every tick (observer.h). */
        cgroup_detach(cg);
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
        rf->added[rf->n_added++] = (CgEntry) { .cg = cg, .seen = true, .unit = cgroup_path_unit(cg->path),
                                               .found_usec = rf->t->n > 0 ? now_usec(CLOCK_MONOTONIC) : 0 };
        return 0;
}

/* Drops unseen entries, appends the new ones, sorts once. */
static int refresh_merge(Refresh *rf) {
        CgTable *t = rf->t;
        size_t kept = 0;
        CgEntry *n;

        for (size_t i = 0; i < t->n; i++) {
                if (!t->entries[i].seen) {
                        cgroup_free(t->entries[i].cg);
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
        if (skipped != t->walk_skipped && skipped > 0)
                log_warning("%u subtrees below %s could not be read (out of file descriptors, or no access); "
                            "their cgroups are not watched", skipped, root->path);
        t->walk_skipped = skipped;
        for (size_t i = 0; i < rf.n_added; i++)
                cgroup_free(rf.added[i].cg);
        free(rf.added);
        if (rf.out_of_fds > 0 && rf.out_of_fds != t->unopened)
                log_warning("Out of file descriptors: %zu new cgroups could not be opened and are not watched; "
                            "raise LimitNOFILE= of the service", rf.out_of_fds);
        t->unopened = rf.out_of_fds;
        return r;
}

void cgtable_clear(CgTable *t) {
        for (size_t i = 0; i < t->n; i++)
                cgroup_free(t->entries[i].cg);
        free(t->entries);
        *t = (CgTable) {};
}
