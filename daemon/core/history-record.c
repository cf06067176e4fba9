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

static bool cursor_usable(const HistoryCursor *c, uint64_t now_usec) {
        return c && c->valid && c->monotonic_usec < now_usec;
}

void history_sample_cgroup(const CgEntry *e, const Ledger *l, const HistoryCursor *c, uint64_t page_size,
                           uint64_t realtime_usec, HistorySample *ret) {
        const CgroupSample *s = cg_entry_sample(e);
        uint64_t now = e->sample_usec;
        CgroupSignals g = {};

        *ret = (HistorySample) { .realtime_usec = realtime_usec, .memory_high = memory_high_in_force(e, l),
                                 .wbps_cap = wbps_cap_in_force(e, l), .memory_bytes = HISTORY_NONE,
                                 .file_bytes = HISTORY_NONE, .dirty_bytes = HISTORY_NONE,
                                 .slab_reclaimable_bytes = HISTORY_NONE, .memory_stall_usec = HISTORY_NONE,
                                 .io_stall_usec = HISTORY_NONE, .write_rate = HISTORY_NONE };
        if (!s)
                return;
        if (s->have & SAMPLE_MEMORY_CURRENT)
                ret->memory_bytes = s->memory_current;
        if (sample_has_stat(s, STAT_FILE))
                ret->file_bytes = s->stat[STAT_FILE];
        if (s->have & SAMPLE_MEMORY_STAT)
                ret->dirty_bytes = sample_dirty_bytes(s);
        if (sample_has_stat(s, STAT_SLAB_RECLAIMABLE))
                ret->slab_reclaimable_bytes = s->stat[STAT_SLAB_RECLAIMABLE];
        if (!cursor_usable(c, now))
                return;
        if (signals_derive(&c->cgroup, c->monotonic_usec, s, now, page_size, &g) < 0) {
                signals_done(&g);
                return;
        }
        ret->interval_usec = g.interval_usec;
        if (g.have_memory_stall)
                ret->memory_stall_usec = g.memory_stall.some_usec;
        if (g.have_io_stall)
                ret->io_stall_usec = g.io_stall.some_usec;
        if ((c->cgroup.have & s->have & SAMPLE_IO_STAT) != 0)
                ret->write_rate = g.write_rate;
        signals_done(&g);
}

void history_sample_host(const Observer *o, const HistoryCursor *c, uint64_t realtime_usec, HistorySample *ret) {
        const SystemSample *s = observer_system_sample(o);
        uint64_t now = o->system_usec[o->system_cur];
        uint64_t total = system_meminfo(s, MEMINFO_MEM_TOTAL, HISTORY_NONE);
        uint64_t avail = system_meminfo(s, MEMINFO_MEM_AVAILABLE, HISTORY_NONE);
        bool since = cursor_usable(c, now);
        SystemSignals g = {};

        if (s)
                system_signals_derive(since ? &c->system : s, since ? c->monotonic_usec : now, s, now, o->page_size,
                                      &g);
        *ret = (HistorySample) {
                .realtime_usec = realtime_usec,
                .interval_usec = g.valid ? g.interval_usec : 0,
                .memory_bytes = total != HISTORY_NONE && avail != HISTORY_NONE ? u64_delta(total, avail) : HISTORY_NONE,
                .file_bytes = system_meminfo(s, MEMINFO_CACHED, HISTORY_NONE),
                .dirty_bytes = s && (s->vmstat_found & (UINT64_C(1) << VMSTAT_NR_DIRTY)) ? g.dirty_bytes : HISTORY_NONE,
                .slab_reclaimable_bytes = system_meminfo(s, MEMINFO_SRECLAIMABLE, HISTORY_NONE),
                .memory_stall_usec = g.valid && g.have_memory_stall ? g.memory_stall.some_usec : HISTORY_NONE,
                .io_stall_usec = g.valid && g.have_io_stall ? g.io_stall.some_usec : HISTORY_NONE,
                .write_rate = HISTORY_NONE,
                .memory_high = HISTORY_NONE,
                .wbps_cap = HISTORY_NONE,
        };
}

static bool governed(const CgEntry *e) {
        return !e->gone && e->policy && e->policy->mode != POLICY_MODE_OFF && e->n_samples > 0 &&
               !streq(e->cg->path, "/");
}

static int record_host(History *h, const Observer *o, uint64_t realtime_usec) {
        const SystemSample *s = observer_system_sample(o);
        HistoryCursor *c = history_cursor(h, NULL);
        HistorySample sample;
        int r;

        history_sample_host(o, c, realtime_usec, &sample);
        r = history_append(h, NULL, &sample);
        if (r < 0 || !s)
                return r;
        *c = (HistoryCursor) { .valid = true, .monotonic_usec = o->system_usec[o->system_cur], .system = *s };
        return 0;
}

static int record_cgroup(History *h, const CgEntry *e, const Ledger *l, uint64_t page_size, uint64_t realtime_usec) {
        const CgroupSample *s = cg_entry_sample(e);
        HistorySample sample;
        HistoryCursor *c;
        int r;

        history_sample_cgroup(e, l, history_cursor(h, e->cg->path), page_size, realtime_usec, &sample);
        r = history_append(h, e->cg->path, &sample);
        if (r < 0)
                return r;
        /* The track may be new: looked up again. */
        c = history_cursor(h, e->cg->path);
        if (c && s) {
                /* Without room for the devices the cursor keeps the rest; the next write rate is unknown. */
                (void) sample_assign(&c->cgroup, s);
                c->valid = true;
                c->monotonic_usec = e->sample_usec;
        }
        return 0;
}

int history_record(History *h, const Observer *o, const Ledger *l, uint64_t realtime_usec) {
        int refused = 0, r;

        r = record_host(h, o, realtime_usec);
        if (r < 0)
                return r;
        /* Cgroups with a track first: one without may take only a track no cgroup wrote this round. */
        /* The governed are on the observer's list of what each pass samples first: no other entry is
         * looked at. */
        for (int with_track = 1; with_track >= 0; with_track--)
                for (size_t i = 0; i < o->n_every; i++) {
                        const CgEntry *e = cgtable_find(&o->cgroups, o->every[i]);

                        if (!e || !governed(e) || (history_find(h, e->cg->path) != NULL) != with_track)
                                continue;
                        r = record_cgroup(h, e, l, o->page_size, realtime_usec);
                        if (r == -ENOSPC)
                                refused++;
                        else if (r < 0)
                                return r;
                }
        return refused;
}
