/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostfs.h"
#include "openmetrics.h"
#include "util.h"

/* ---- which cgroups ---- */

/* A figure of a cgroup; false when the cgroup lacks it (a file it has not, no second sample yet). */
typedef bool (*CgroupFigure)(const CgEntry *e, uint64_t *ret);

static bool memory_current(const CgEntry *e, uint64_t *ret) {
        const CgroupSample *s = cg_entry_sample(e);

        if (!s || !(s->have & SAMPLE_MEMORY_CURRENT))
                return false;
        *ret = s->memory_current;
        return true;
}

static bool stat_figure(const CgEntry *e, MemoryStatKey k, uint64_t *ret) {
        const CgroupSample *s = cg_entry_sample(e);

        if (!s || !sample_has_stat(s, k))
                return false;
        *ret = s->stat[k];
        return true;
}

static bool file_bytes(const CgEntry *e, uint64_t *ret) {
        return stat_figure(e, STAT_FILE, ret);
}

static bool slab_reclaimable(const CgEntry *e, uint64_t *ret) {
        return stat_figure(e, STAT_SLAB_RECLAIMABLE, ret);
}

static bool dirty_bytes(const CgEntry *e, uint64_t *ret) {
        const CgroupSample *s = cg_entry_sample(e);

        if (!s || !(s->have & SAMPLE_MEMORY_STAT))
                return false;
        *ret = sample_dirty_bytes(s);
        return true;
}

static bool memory_stall_usec(const CgEntry *e, uint64_t *ret) {
        const CgroupSample *s = cg_entry_sample(e);

        if (!s || !(s->have & SAMPLE_MEMORY_PRESSURE))
                return false;
        *ret = s->memory_pressure.some.total;
        return true;
}

static bool io_stall_usec(const CgEntry *e, uint64_t *ret) {
        const CgroupSample *s = cg_entry_sample(e);

        if (!s || !(s->have & SAMPLE_IO_PRESSURE))
                return false;
        *ret = s->io_pressure.some.total;
        return true;
}

static bool write_rate(const CgEntry *e, uint64_t *ret) {
        const CgroupSample *s = cg_entry_sample(e);

        if (!s || !(s->have & SAMPLE_IO_STAT) || !e->signals.valid)
                return false;
        *ret = e->signals.write_rate;
        return true;
}

/* TopBy=io_stall: the share of the last interval stalled, not the total since boot. */
static bool io_stall_share(const CgEntry *e, uint64_t *ret) {
        if (!e->signals.valid || !e->signals.have_io_stall)
                return false;
        *ret = e->signals.io_stall.some_ppm;
        return true;
}

static const CgroupFigure top_keys[_METRICS_TOP_MAX] = {
        [METRICS_TOP_MEMORY] = memory_current,
        [METRICS_TOP_DIRTY] = dirty_bytes,
        [METRICS_TOP_SLAB] = slab_reclaimable,
        [METRICS_TOP_IO_STALL] = io_stall_share,
};

typedef struct Ranked {
        const CgEntry *entry;
        uint64_t key;
} Ranked;

static int ranked_cmp(const void *a, const void *b) {
        const Ranked *x = a, *y = b;

        if (x->key != y->key)
                return x->key > y->key ? -1 : 1;
        return strcmp(x->entry->cg->path, y->entry->cg->path);
}

static int path_cmp(const void *a, const void *b) {
        return strcmp((*(const CgEntry *const *) a)->cg->path, (*(const CgEntry *const *) b)->cg->path);
}

/* The cgroups exported, by path: every one with a policy, and the TopCgroups= others whose
 * TopBy= figure is highest (above zero). *ret_watched: the cgroups not found gone. */
static int select_cgroups(const Observer *o, const MetricsSettings *st, const CgEntry ***ret, size_t *ret_n,
                          size_t *ret_watched) {
        _cleanup_free_ const CgEntry **out = calloc(o->cgroups.n + 1, sizeof(CgEntry *));
        _cleanup_free_ Ranked *others = calloc(o->cgroups.n + 1, sizeof(Ranked));
        CgroupFigure key = top_keys[st->top_by < _METRICS_TOP_MAX ? st->top_by : METRICS_TOP_MEMORY];
        size_t n = 0, n_others = 0, watched = 0;

        if (!out || !others)
                return -ENOMEM;
        for (size_t i = 0; i < o->cgroups.n; i++) {
                const CgEntry *e = &o->cgroups.entries[i];
                uint64_t k;

                if (e->gone)
                        continue;
                watched++;
                if (e->policy)
                        out[n++] = e;
                else if (key(e, &k) && k > 0)
                        others[n_others++] = (Ranked) { e, k };
        }
        qsort(others, n_others, sizeof(Ranked), ranked_cmp);
        for (size_t i = 0; i < MIN(n_others, (size_t) st->top_cgroups); i++)
                out[n++] = others[i].entry;
        qsort(out, n, sizeof(CgEntry *), path_cmp);
        *ret = TAKE_PTR(out);
        *ret_n = n;
        *ret_watched = watched;
        return 0;
}

/* ---- the families ---- */

typedef struct CgroupFamily {
        OmFamily family;
        CgroupFigure figure;
        bool usec;              /* the figure is in µs, written in seconds */
} CgroupFamily;

static const CgroupFamily cgroup_families[] = {
        { { "mdreclaim_cgroup_memory_current_bytes", OM_GAUGE, "bytes",
            "Memory charged to the cgroup (memory.current)" }, memory_current, false },
        { { "mdreclaim_cgroup_file_bytes", OM_GAUGE, "bytes",
            "Page cache of the cgroup, dirty and writeback included (memory.stat file)" }, file_bytes, false },
        { { "mdreclaim_cgroup_dirty_bytes", OM_GAUGE, "bytes",
            "Dirty page cache and page cache under writeback (memory.stat file_dirty + file_writeback)" },
          dirty_bytes, false },
        { { "mdreclaim_cgroup_slab_reclaimable_bytes", OM_GAUGE, "bytes",
            "Reclaimable slab: dentries, inodes and other kernel caches (memory.stat slab_reclaimable)" },
          slab_reclaimable, false },
        { { "mdreclaim_cgroup_memory_stall_seconds", OM_COUNTER, "seconds",
            "Time some of the cgroup's tasks stalled on memory (memory.pressure some total)" },
          memory_stall_usec, true },
        { { "mdreclaim_cgroup_io_stall_seconds", OM_COUNTER, "seconds",
            "Time some of the cgroup's tasks stalled on io (io.pressure some total)" }, io_stall_usec, true },
        { { "mdreclaim_cgroup_write_rate_bytes_per_second", OM_GAUGE, "bytes_per_second",
            "Bytes the cgroup wrote to block devices per second over the last interval (io.stat wbytes)" },
          write_rate, false },
};

static void put_cgroups(FILE *f, const CgEntry *const *cgroups, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(cgroup_families); i++) {
                const CgroupFamily *c = &cgroup_families[i];

                om_family(f, &c->family);
                for (size_t j = 0; j < n; j++) {
                        OmLabel label = { "cgroup", cgroups[j]->cg->path };
                        uint64_t v;

                        if (!c->figure(cgroups[j], &v))
                                continue;
                        if (c->usec)
                                om_sample_usec(f, &c->family, &label, 1, v);
                        else
                                om_sample(f, &c->family, &label, 1, v);
                }
        }
}

static const OmFamily throttle_family = {
        "mdreclaim_throttle_limit", OM_GAUGE, NULL,
        "A throttle a point holds: memory.high or memory.swap.max in bytes, or io.max wbps= on the device in bytes per second",
};

static void put_throttle(FILE *f, Manager *m, const ThrottleEntry *t) {
        const CgEntry *e = cgtable_find(&m->observer->cgroups, t->cgroup_id);
        char device[32];

        snprintf(device, sizeof(device), "%u:%u", t->major, t->minor);
        for (int p = 0; p < _POINT_MAX; p++) {
                OmLabel labels[] = {
                        { "cgroup", t->path },
                        { "unit", e ? e->unit : NULL },
                        { "knob", throttle_kind_to_string(t->kind) },
                        { "device", t->kind == THROTTLE_IO_WBPS ? device : NULL },
                        { "point", throttle_point_to_string((ThrottlePoint) p) },
                };

                if (t->requested[p] != THROTTLE_NONE)
                        om_sample(f, &throttle_family, labels, ELEMENTSOF(labels), t->requested[p]);
        }
}

static void put_throttles(FILE *f, Manager *m) {
        const Ledger *l = actuator_ledger(m->actuator);

        om_family(f, &throttle_family);
        for (size_t i = 0; i < l->n; i++)
                put_throttle(f, m, &l->entries[i]);
}

static const OmFamily actions_family = {
        "mdreclaim_point_actions", OM_COUNTER, NULL,
        "Actions of a point's plans: handed to the actuator (mode enforce; a lift only when a throttle "
        "was held), or only logged (mode observe)",
};

static void put_action(FILE *f, ThrottlePoint p, PointActionKind kind, const PointCounters *c) {
        unsigned place = point_action_index(kind);
        OmLabel labels[] = {
                { "point", throttle_point_to_string(p) }, { "action", point_action_to_string(kind) },
                { "mode", "enforce" },
        };

        om_sample(f, &actions_family, labels, ELEMENTSOF(labels), c->done[place]);
        labels[2].value = "observe";
        om_sample(f, &actions_family, labels, ELEMENTSOF(labels), c->observed[place]);
}

/* The write point's kinds up to its writeback (its queue settings are not counted here), then the
 * allocation point's. */
static void put_points(FILE *f, Manager *m) {
        om_family(f, &actions_family);
        for (PointActionKind k = PA_SET_CAP; k <= PA_WRITEBACK; k++)
                put_action(f, POINT_WRITE, k, &m->write_runner.counters);
        for (PointActionKind k = PA_RECLAIM; k <= PA_LIFT_HIGH; k++)
                put_action(f, POINT_ALLOCATION, k, &m->alloc_runner.counters);
}

/* A family of one sample without labels. */
typedef struct Single {
        OmFamily family;
        uint64_t value;
} Single;

static void put_singles(FILE *f, const Single *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                om_family(f, &s[i].family);
                om_sample(f, &s[i].family, NULL, 0, s[i].value);
        }
}

static void put_daemon(FILE *f, Manager *m, size_t watched) {
        const Single singles[] = {
                { { "mdreclaim_reclaims", OM_COUNTER, NULL,
                    "memory.reclaim jobs finished: the allocation point's and one-shot requests" },
                  m->alloc_runner.reclaims },
                { { "mdreclaim_reclaimed_bytes", OM_COUNTER, "bytes",
                    "Memory those reclaim jobs took away (memory.current before less after)" },
                  m->alloc_runner.reclaimed_bytes },
                { { "mdreclaim_ticks", OM_COUNTER, NULL, "Ticks: passes that sampled every cgroup and ran both points" },
                  m->ticks },
                { { "mdreclaim_cgroups", OM_GAUGE, NULL, "Cgroups watched" }, watched },
                { { "mdreclaim_cgroups_governed", OM_GAUGE, NULL, "Cgroups under a policy" }, m->n_with_policy },
                { { "mdreclaim_policies", OM_GAUGE, NULL, "Policies loaded" }, m->config->n_policies },
                { { "mdreclaim_psi_triggers", OM_GAUGE, NULL, "PSI triggers armed" }, trigger_set_armed(&m->triggers) },
                { { "mdreclaim_psi_wakeups", OM_COUNTER, NULL, "Times a PSI trigger woke the daemon" },
                  m->trigger_wakeups },
        };
        int fds = host_count_own_fds();

        put_singles(f, singles, ELEMENTSOF(singles));
        if (fds >= 0)
                put_singles(f, &(Single) { { "mdreclaim_open_fds", OM_GAUGE, NULL, "File descriptors the daemon has open" },
                                           (uint64_t) fds }, 1);
}

int metrics_render(Manager *m, char **ret, size_t *ret_size) {
        _cleanup_free_ const CgEntry **cgroups = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n, watched, size = 0;
        FILE *f;
        bool failed;
        int r;

        r = select_cgroups(m->observer, &m->config->daemon.metrics, &cgroups, &n, &watched);
        if (r < 0)
                return r;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        put_cgroups(f, cgroups, n);
        put_throttles(f, m);
        put_points(f, m);
        put_daemon(f, m, watched);
        om_eof(f);
        failed = ferror(f);
        if (fclose(f) != 0 || failed)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        *ret_size = size;
        return 0;
}
