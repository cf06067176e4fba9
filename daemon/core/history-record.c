/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "history-record.h"

#include <errno.h>

#include "policy.h"
#include "util.h"

/* memory.high as the daemon holds it, else as last read; HISTORY_NONE for "max" or unknown. */
static uint64_t memory_high_in_force(const CgEntry *e, const Ledger *l) {
        for (size_t i = 0; i < l->n; i++) {
                const ThrottleEntry *t = &l->entries[i];
                if (t->cgroup_id == e->cg->id && t->kind == THROTTLE_MEMORY_HIGH)
                        return t->applied;
        }
        return e->limits.have & (1u << LIMIT_HIGH) ? e->limits.limit[LIMIT_HIGH] : HISTORY_NONE;
}

/* The lowest io.max wbps= the daemon holds on the cgroup, on any device; HISTORY_NONE: none. */
static uint64_t wbps_cap_in_force(const CgEntry *e, const Ledger *l) {
        uint64_t cap = HISTORY_NONE;

        for (size_t i = 0; i < l->n; i++) {
                const ThrottleEntry *t = &l->entries[i];
                if (t->cgroup_id == e->cg->id && t->kind == THROTTLE_IO_WBPS)
                        cap = MIN(cap, t->applied);
        }
        return cap;
}

void history_sample_cgroup(const CgEntry *e, const Ledger *l, uint64_t realtime_usec, HistorySample *ret) {
        const CgroupSample *s = cg_entry_sample(e);
        const CgroupSignals *g = &e->signals;

        *ret = (HistorySample) { .realtime_usec = realtime_usec, .memory_high = memory_high_in_force(e, l),
                                 .wbps_cap = wbps_cap_in_force(e, l) };
        ret->memory_bytes = s && (s->have & SAMPLE_MEMORY_CURRENT) ? s->memory_current : HISTORY_NONE;
        ret->file_bytes = s && sample_has_stat(s, STAT_FILE) ? s->stat[STAT_FILE] : HISTORY_NONE;
        ret->dirty_bytes = s && (s->have & SAMPLE_MEMORY_STAT) ? sample_dirty_bytes(s) : HISTORY_NONE;
        ret->slab_reclaimable_bytes = s && sample_has_stat(s, STAT_SLAB_RECLAIMABLE) ?
                                      s->stat[STAT_SLAB_RECLAIMABLE] : HISTORY_NONE;
        ret->interval_usec = g->valid ? g->interval_usec : 0;
        ret->memory_stall_usec = g->valid && g->have_memory_stall ? g->memory_stall.some_usec : HISTORY_NONE;
        ret->io_stall_usec = g->valid && g->have_io_stall ? g->io_stall.some_usec : HISTORY_NONE;
        ret->write_rate = g->valid ? g->write_rate : HISTORY_NONE;
}

static uint64_t meminfo_or_none(const SystemSample *s, MeminfoKey k) {
        return system_meminfo(s, k, HISTORY_NONE);
}

void history_sample_host(const Observer *o, uint64_t realtime_usec, HistorySample *ret) {
        const SystemSample *s = observer_system_sample(o);
        const SystemSignals *g = &o->system_signals;
        uint64_t total = meminfo_or_none(s, MEMINFO_MEM_TOTAL), avail = meminfo_or_none(s, MEMINFO_MEM_AVAILABLE);

        *ret = (HistorySample) {
                .realtime_usec = realtime_usec,
                .interval_usec = g->valid ? g->interval_usec : 0,
                .memory_bytes = total != HISTORY_NONE && avail != HISTORY_NONE ? u64_delta(total, avail) : HISTORY_NONE,
                .file_bytes = meminfo_or_none(s, MEMINFO_CACHED),
                .dirty_bytes = s && (s->vmstat_found & (UINT64_C(1) << VMSTAT_NR_DIRTY)) ? g->dirty_bytes : HISTORY_NONE,
                .slab_reclaimable_bytes = meminfo_or_none(s, MEMINFO_SRECLAIMABLE),
                .memory_stall_usec = g->valid && g->have_memory_stall ? g->memory_stall.some_usec : HISTORY_NONE,
                .io_stall_usec = g->valid && g->have_io_stall ? g->io_stall.some_usec : HISTORY_NONE,
                .write_rate = HISTORY_NONE,
                .memory_high = HISTORY_NONE,
                .wbps_cap = HISTORY_NONE,
        };
}

static bool governed(const CgEntry *e) {
        return !e->gone && e->policy && e->policy->mode != POLICY_MODE_OFF && e->n_samples > 0 &&
               !streq(e->cg->path, "/");
}

int history_record(History *h, const Observer *o, const Ledger *l, uint64_t realtime_usec) {
        HistorySample s;
        int refused = 0, r;

        history_sample_host(o, realtime_usec, &s);
        r = history_append(h, NULL, &s);
        if (r < 0)
                return r;
        for (size_t i = 0; i < o->cgroups.n; i++) {
                const CgEntry *e = &o->cgroups.entries[i];

                if (!governed(e))
                        continue;
                history_sample_cgroup(e, l, realtime_usec, &s);
                r = history_append(h, e->cg->path, &s);
                if (r == -ENOSPC)
                        refused++;
                else if (r < 0)
                        return r;
        }
        return refused;
}
