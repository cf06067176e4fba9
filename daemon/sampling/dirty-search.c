/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "dirty-search.h"

#include <errno.h>
#include <string.h>

#include "derived.h"
#include "util.h"

#define SEARCH_WIDTH 8          /* cgroups followed down at each level: the dirtiest */
#define SEARCH_DEPTH 16

typedef struct Frontier {
        const char *path[SEARCH_WIDTH];
        uint64_t dirty[SEARCH_WIDTH];
        size_t n;
} Frontier;

/* Whether `path`'s parent is `parent`. */
static bool child_of(const char *path, const char *parent) {
        const char *slash = strrchr(path, '/');
        size_t len;

        if (!slash || streq(path, "/"))
                return false;
        len = slash == path ? 1 : (size_t) (slash - path);
        return strlen(parent) == len && strncmp(path, parent, len) == 0;
}

static bool child_of_any(const char *path, const Frontier *f) {
        for (size_t i = 0; i < f->n; i++)
                if (child_of(path, f->path[i]))
                        return true;
        return false;
}

/* Kept if among the dirtiest SEARCH_WIDTH, in order. */
static void frontier_add(Frontier *f, const char *path, uint64_t dirty) {
        size_t k;

        if (f->n == SEARCH_WIDTH && f->dirty[SEARCH_WIDTH - 1] >= dirty)
                return;
        k = f->n < SEARCH_WIDTH ? f->n++ : SEARCH_WIDTH - 1;
        for (; k > 0 && f->dirty[k - 1] < dirty; k--) {
                f->path[k] = f->path[k - 1];
                f->dirty[k] = f->dirty[k - 1];
        }
        f->path[k] = path;
        f->dirty[k] = dirty;
}

/* One level down: the children of `cur` sampled now, those holding min_bytes or more into `next`. */
static int search_level(Observer *o, const Frontier *cur, Frontier *next, uint64_t min_bytes, uint64_t now,
                        DirtySearch *ret) {
        for (size_t i = 0; i < o->cgroups.n && ret->reads < DIRTY_SEARCH_READS_MAX; i++) {
                CgEntry *e = &o->cgroups.entries[i];
                const CgroupSample *s;
                int r;

                if (e->gone || !child_of_any(e->cg->path, cur))
                        continue;
                r = observer_sample_entry(o, e, now);
                ret->reads++;
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || !(s = cg_entry_sample(e)) || sample_dirty_bytes(s) < min_bytes)
                        continue;
                observer_warm(o, e);
                ret->found++;
                frontier_add(next, e->cg->path, sample_dirty_bytes(s));
        }
        return 0;
}

int dirty_search(Observer *o, uint64_t min_bytes, uint64_t now, DirtySearch *ret) {
        Frontier a = { .path = { "/" }, .n = 1 }, b;
        Frontier *cur = &a, *next = &b;

        *ret = (DirtySearch) {};
        for (ret->depth = 0; ret->depth < SEARCH_DEPTH && cur->n > 0; ret->depth++) {
                Frontier *t;
                int r;

                next->n = 0;
                r = search_level(o, cur, next, min_bytes, now, ret);
                if (r < 0)
                        return r;
                t = cur;
                cur = next;
                next = t;
        }
        return ret->found > 0;
}
