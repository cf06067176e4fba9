/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostfs.h"
#include "promtext.h"
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

/* The labels of every sample of a cgroup: its path and, for a unit's cgroup, the unit. */
#define CGROUP_LABELS(e) { "cgroup", (e)->cg->path }, { "unit", (e)->unit }

typedef struct CgroupFamily {
        PromFamily family;
        CgroupFigure figure;
        bool usec;              /* the figure is in µs, written in seconds */
} CgroupFamily;

static const CgroupFamily cgroup_families[] = {
        { { "mdreclaim_cgroup_memory_current_bytes", PROM_GAUGE,
            "Memory charged to the cgroup (memory.current)" }, memory_current, false },
        { { "mdreclaim_cgroup_file_bytes", PROM_GAUGE,
            "Page cache of the cgroup, dirty and writeback included (memory.stat file)" }, file_bytes, false },
        { { "mdreclaim_cgroup_dirty_bytes", PROM_GAUGE,
            "Dirty page cache and page cache under writeback (memory.stat file_dirty + file_writeback)" },
          dirty_bytes, false },
        { { "mdreclaim_cgroup_slab_reclaimable_bytes", PROM_GAUGE,
            "Reclaimable slab: dentries, inodes and other kernel caches (memory.stat slab_reclaimable)" },
          slab_reclaimable, false },
        { { "mdreclaim_cgroup_memory_stall_seconds_total", PROM_COUNTER,
            "Time some of the cgroup's tasks stalled on memory (memory.pressure some total)" },
          memory_stall_usec, true },
        { { "mdreclaim_cgroup_io_stall_seconds_total", PROM_COUNTER,
            "Time some of the cgroup's tasks stalled on io (io.pressure some total)" }, io_stall_usec, true },
        { { "mdreclaim_cgroup_write_rate_bytes_per_second", PROM_GAUGE,
            "Bytes the cgroup wrote to block devices per second over the last interval (io.stat wbytes)" },
          write_rate, false },
};

static void put_cgroups(FILE *f, const CgEntry *const *cgroups, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(cgroup_families); i++) {
                const CgroupFamily *c = &cgroup_families[i];

                prom_family(f, &c->family);
                for (size_t j = 0; j < n; j++) {
                        PromLabel labels[] = { CGROUP_LABELS(cgroups[j]) };
                        uint64_t v;

                        if (!c->figure(cgroups[j], &v))
                                continue;
                        if (c->usec)
                                prom_sample_micro(f, &c->family, labels, ELEMENTSOF(labels), v);
                        else
                                prom_sample(f, &c->family, labels, ELEMENTSOF(labels), v);
                }
        }
}

static const PromFamily info_family = {
        "mdreclaim_cgroup_info", PROM_GAUGE,
        "Always 1: the policy governing the cgroup, its Mode= and Protect= (left out under no policy)",
};

static void put_info(FILE *f, const CgEntry *const *cgroups, size_t n) {
        prom_family(f, &info_family);
        for (size_t j = 0; j < n; j++) {
                const Policy *p = cgroups[j]->policy;
                PromLabel labels[] = {
                        CGROUP_LABELS(cgroups[j]),
                        { "policy", p ? p->name : NULL },
                        { "mode", p ? policy_mode_to_string(p->mode) : NULL },
                        { "protect", p ? (p->protect ? "yes" : "no") : NULL },
                };

                prom_sample(f, &info_family, labels, ELEMENTSOF(labels), 1);
        }
}

/* A share (ppm) a cgroup's policy sets, with the daemon's default filled in; false: none applies. */
typedef bool (*PolicyShare)(const Policy *p, const DaemonSettings *d, uint64_t *ret);

static bool io_stall_limit(const Policy *p, const DaemonSettings *d, uint64_t *ret) {
        if (!p->protect)
                return false;
        *ret = p->io_pressure_limit_ppm ?: d->io_pressure_limit_ppm;
        return true;
}

static bool memory_stall_target(const Policy *p, const DaemonSettings *d, uint64_t *ret) {
        *ret = p->pressure_target_ppm;
        return p->pressure_target_ppm > 0;
}

typedef struct ShareFamily {
        PromFamily family;
        PolicyShare share;
} ShareFamily;

static const ShareFamily share_families[] = {
        { { "mdreclaim_cgroup_io_stall_limit_ratio", PROM_GAUGE,
            "IOPressureLimit= of a protected cgroup: the share of time stalled on io it tolerates, beyond its "
            "learnt baseline, before writers beside it are capped" }, io_stall_limit },
        { { "mdreclaim_cgroup_memory_stall_target_ratio", PROM_GAUGE,
            "PressureTarget= of the cgroup's policy: proactive reclaim runs while its memory stall share stays "
            "below it" }, memory_stall_target },
};

static void put_shares(FILE *f, const DaemonSettings *d, const CgEntry *const *cgroups, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(share_families); i++) {
                const ShareFamily *s = &share_families[i];

                prom_family(f, &s->family);
                for (size_t j = 0; j < n; j++) {
                        PromLabel labels[] = { CGROUP_LABELS(cgroups[j]) };
                        uint64_t ppm;

                        if (cgroups[j]->policy && s->share(cgroups[j]->policy, d, &ppm))
                                prom_sample_micro(f, &s->family, labels, ELEMENTSOF(labels), ppm);
                }
        }
}

static const PromFamily memory_throttle_family = {
        "mdreclaim_throttle_memory_limit_bytes", PROM_GAUGE,
        "A memory throttle a point holds on the cgroup: memory.high, or memory.swap.max for a cache-only reclaim",
};

static const PromFamily write_throttle_family = {
        "mdreclaim_throttle_write_limit_bytes_per_second", PROM_GAUGE,
        "A write cap a point holds on the cgroup: io.max wbps= on the device",
};

static const PromFamily write_floor_family = {
        "mdreclaim_throttle_write_floor_bytes_per_second", PROM_GAUGE,
        "The floor of a write cap held (WriteRateMin=), where known: a size, or a share of the device's "
        "measured capacity",
};

static void put_throttle(FILE *f, const PromFamily *fam, const CgEntry *e, const ThrottleEntry *t) {
        char device[32];

        snprintf(device, sizeof(device), "%u:%u", t->major, t->minor);
        for (int p = 0; p < _POINT_MAX; p++) {
                PromLabel labels[] = {
                        { "cgroup", t->path },
                        { "unit", e ? e->unit : NULL },
                        { "knob", t->kind == THROTTLE_IO_WBPS ? NULL : throttle_kind_to_string(t->kind) },
                        { "device", t->kind == THROTTLE_IO_WBPS ? device : NULL },
                        { "point", throttle_point_to_string((ThrottlePoint) p) },
                };

                if (t->requested[p] != THROTTLE_NONE)
                        prom_sample(f, fam, labels, ELEMENTSOF(labels), t->requested[p]);
        }
}

/* The floor wp-caps.c gives a cap on this cgroup and device: WriteRateMin= as a size, or its share
 * (the daemon's when the policy sets none) of the device's capacity; never under 1 MiB/s. False
 * where it depends on a capacity not measured (then the writer's rate when capped set it). */
static bool write_floor(Manager *m, const CgEntry *e, const ThrottleEntry *t, uint64_t *ret) {
        const SizeOrPercent *min = e && e->policy && e->policy->write_rate_min.set ? &e->policy->write_rate_min : NULL;
        const DevStat *d;
        uint64_t ppm;

        if (min && !min->is_percent) {
                *ret = MAX(min->bytes, POLICY_WRITE_RATE_MIN_MIN);
                return true;
        }
        d = devstat_find(&m->observer->devices, t->major, t->minor);
        if (!d || !d->capacity)
                return false;
        ppm = min ? min->ppm : m->config->daemon.write_rate_min_ppm;
        *ret = MAX(d->capacity / PPM_ONE * ppm + d->capacity % PPM_ONE * ppm / PPM_ONE, POLICY_WRITE_RATE_MIN_MIN);
        return true;
}

static void put_floor(FILE *f, Manager *m, const CgEntry *e, const ThrottleEntry *t) {
        char device[32];
        PromLabel labels[] = { { "cgroup", t->path }, { "unit", e ? e->unit : NULL }, { "device", device } };
        uint64_t floor;

        snprintf(device, sizeof(device), "%u:%u", t->major, t->minor);
        if (t->requested[POINT_WRITE] != THROTTLE_NONE && write_floor(m, e, t, &floor))
                prom_sample(f, &write_floor_family, labels, ELEMENTSOF(labels), floor);
}

/* The ledger in three families: memory throttles (bytes), write caps and their floors (bytes/s). */
static void put_throttles(FILE *f, Manager *m) {
        const Ledger *l = actuator_ledger(m->actuator);
        const PromFamily *families[] = { &memory_throttle_family, &write_throttle_family, &write_floor_family };

        for (size_t i = 0; i < ELEMENTSOF(families); i++) {
                prom_family(f, families[i]);
                for (size_t j = 0; j < l->n; j++) {
                        const ThrottleEntry *t = &l->entries[j];
                        const CgEntry *e = cgtable_find(&m->observer->cgroups, t->cgroup_id);
                        bool memory = t->kind == THROTTLE_MEMORY_HIGH || t->kind == THROTTLE_SWAP_MAX;

                        if (families[i] == &memory_throttle_family && memory)
                                put_throttle(f, families[i], e, t);
                        else if (families[i] == &write_throttle_family && t->kind == THROTTLE_IO_WBPS)
                                put_throttle(f, families[i], e, t);
                        else if (families[i] == &write_floor_family && t->kind == THROTTLE_IO_WBPS)
                                put_floor(f, m, e, t);
                }
        }
}

static const PromFamily actions_family = {
        "mdreclaim_point_actions_total", PROM_COUNTER,
        "Actions of a point's plans: handed to the actuator (mode enforce; a lift only when a throttle "
        "was held), or only logged (mode observe)",
};

static void put_action(FILE *f, ThrottlePoint p, PointActionKind kind, const PointCounters *c) {
        unsigned place = point_action_index(kind);
        PromLabel labels[] = {
                { "point", throttle_point_to_string(p) }, { "action", point_action_to_string(kind) },
                { "mode", "enforce" },
        };

        prom_sample(f, &actions_family, labels, ELEMENTSOF(labels), c->done[place]);
        labels[2].value = "observe";
        prom_sample(f, &actions_family, labels, ELEMENTSOF(labels), c->observed[place]);
}

/* The write point's kinds up to its writeback (its queue settings are not counted here), then the
 * allocation point's. */
static void put_points(FILE *f, Manager *m) {
        prom_family(f, &actions_family);
        for (PointActionKind k = PA_SET_CAP; k <= PA_WRITEBACK; k++)
                put_action(f, POINT_WRITE, k, &m->write_runner.counters);
        for (PointActionKind k = PA_RECLAIM; k <= PA_LIFT_HIGH; k++)
                put_action(f, POINT_ALLOCATION, k, &m->alloc_runner.counters);
}

/* A family of one sample without labels. */
typedef struct Single {
        PromFamily family;
        uint64_t value;
} Single;

static void put_singles(FILE *f, const Single *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                prom_family(f, &s[i].family);
                prom_sample(f, &s[i].family, NULL, 0, s[i].value);
        }
}

static void put_daemon(FILE *f, Manager *m, size_t watched) {
        const Single singles[] = {
                { { "mdreclaim_reclaims_total", PROM_COUNTER,
                    "memory.reclaim jobs finished: the allocation point's and one-shot requests" },
                  m->alloc_runner.reclaims },
                { { "mdreclaim_reclaimed_bytes_total", PROM_COUNTER,
                    "Memory those reclaim jobs took away (memory.current before less after)" },
                  m->alloc_runner.reclaimed_bytes },
                { { "mdreclaim_ticks_total", PROM_COUNTER,
                    "Ticks: passes that sampled every cgroup and ran both points" }, m->ticks },
                { { "mdreclaim_cgroups", PROM_GAUGE, "Cgroups watched" }, watched },
                { { "mdreclaim_cgroups_governed", PROM_GAUGE, "Cgroups under a policy" }, m->n_with_policy },
                { { "mdreclaim_policies", PROM_GAUGE, "Policies loaded" }, m->config->n_policies },
                { { "mdreclaim_psi_triggers", PROM_GAUGE, "PSI triggers armed" }, trigger_set_armed(&m->triggers) },
                { { "mdreclaim_psi_wakeups_total", PROM_COUNTER, "Times a PSI trigger woke the daemon" },
                  m->trigger_wakeups },
        };
        int fds = host_count_own_fds();

        put_singles(f, singles, ELEMENTSOF(singles));
        if (fds >= 0)
                put_singles(f, &(Single) { { "mdreclaim_open_fds", PROM_GAUGE, "File descriptors the daemon has open" },
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
        put_info(f, cgroups, n);
        put_shares(f, &m->config->daemon, cgroups, n);
        put_throttles(f, m);
        put_points(f, m);
        put_daemon(f, m, watched);
        failed = ferror(f);
        if (fclose(f) != 0 || failed)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        *ret_size = size;
        return 0;
}
