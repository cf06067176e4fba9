/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "derived.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

uint64_t sample_dirty_bytes(const CgroupSample *s) {
        return sample_stat(s, STAT_FILE_DIRTY) + sample_stat(s, STAT_FILE_WRITEBACK);
}

uint64_t sample_clean_file_bytes(const CgroupSample *s) {
        uint64_t file = sample_stat(s, STAT_FILE), dirty = sample_dirty_bytes(s);

        /* Dirty and writeback pages are part of `file` but not cheaply reclaimable. */
        return file > dirty ? file - dirty : 0;
}

uint64_t sample_reclaimable_bytes(const CgroupSample *s) {
        return sample_clean_file_bytes(s) + sample_stat(s, STAT_SLAB_RECLAIMABLE);
}

uint64_t rate_per_sec(uint64_t delta, uint64_t interval_usec) {
        if (interval_usec == 0)
                return 0;
        /* delta * 1e6 / interval without overflow for any realistic delta. */
        if (delta <= UINT64_MAX / USEC_PER_SEC)
                return delta * USEC_PER_SEC / interval_usec;
        return delta / interval_usec * USEC_PER_SEC;
}

static uint32_t to_ppm(uint64_t usec, uint64_t interval_usec) {
        if (interval_usec == 0)
                return 0;
        /* PSI totals and our clock are sampled at slightly different moments. */
        return (uint32_t) MIN(usec * 1000000 / interval_usec, UINT64_C(1000000));
}

void stall_delta(const PsiStats *prev, const PsiStats *cur, uint64_t interval_usec, StallDelta *ret) {
        ret->some_usec = u64_delta(cur->some.total, prev->some.total);
        ret->full_usec = cur->has_full && prev->has_full ? u64_delta(cur->full.total, prev->full.total) : 0;
        ret->some_ppm = to_ppm(ret->some_usec, interval_usec);
        ret->full_ppm = to_ppm(ret->full_usec, interval_usec);
}

/* Change from `from` to `to` per second, signed. */
static int64_t signed_rate(uint64_t from, uint64_t to, uint64_t interval) {
        return to >= from ? (int64_t) rate_per_sec(to - from, interval) : -(int64_t) rate_per_sec(from - to, interval);
}

static const IoStatDev *find_dev(const CgroupSample *s, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < s->n_io; i++)
                if (s->io[i].major == major && s->io[i].minor == minor)
                        return &s->io[i];
        return NULL;
}

static int derive_devices(const CgroupSample *prev, const CgroupSample *cur, uint64_t interval,
                          CgroupSignals *ret) {
        ret->n_devices = 0;
        ret->write_rate = 0;
        if (!(prev->have & SAMPLE_IO_STAT) || !(cur->have & SAMPLE_IO_STAT))
                return 0;
        if (cur->n_io > ret->devices_alloc) {
                DeviceRate *d = reallocarray(ret->devices, cur->n_io, sizeof(*d));

                if (!d)
                        return -ENOMEM;
                ret->devices = d;
                ret->devices_alloc = cur->n_io;
        }
        for (size_t i = 0; i < cur->n_io; i++) {
                const IoStatDev *c = &cur->io[i], *p = find_dev(prev, c->major, c->minor);
                /* A device new in io.stat started from zero. */
                uint64_t w = u64_delta(c->wbytes, p ? p->wbytes : 0);
                uint64_t r = u64_delta(c->rbytes, p ? p->rbytes : 0);
                DeviceRate *d = &ret->devices[ret->n_devices++];

                *d = (DeviceRate) {
                        .major = c->major, .minor = c->minor,
                        .rbytes_per_sec = rate_per_sec(r, interval),
                        .wbytes_per_sec = rate_per_sec(w, interval),
                        .ios = u64_delta(c->rios, p ? p->rios : 0) + u64_delta(c->wios, p ? p->wios : 0),
                };
                ret->write_rate += d->wbytes_per_sec;
        }
        return 0;
}

void signals_done(CgroupSignals *g) {
        free(g->devices);
        *g = (CgroupSignals) {};
}

static uint64_t stat_rate(const CgroupSample *prev, const CgroupSample *cur, MemoryStatKey k,
                          uint64_t interval, uint64_t unit) {
        if (!sample_has_stat(prev, k) || !sample_has_stat(cur, k))
                return 0;
        return rate_per_sec(u64_delta(cur->stat[k], prev->stat[k]) * unit, interval);
}

int signals_derive(const CgroupSample *prev, uint64_t prev_usec, const CgroupSample *cur,
                   uint64_t cur_usec, uint64_t page_size, CgroupSignals *ret) {
        uint64_t interval = u64_delta(cur_usec, prev_usec);
        DeviceRate *devices = ret->devices;
        uint8_t alloc = ret->devices_alloc;
        int r;

        *ret = (CgroupSignals) { .devices = devices, .devices_alloc = alloc };
        if (interval == 0)
                return 0;
        ret->valid = true;
        ret->interval_usec = interval;

        ret->have_memory_stall = (prev->have & cur->have & SAMPLE_MEMORY_PRESSURE) != 0;
        if (ret->have_memory_stall)
                stall_delta(&prev->memory_pressure, &cur->memory_pressure, interval, &ret->memory_stall);
        ret->have_io_stall = (prev->have & cur->have & SAMPLE_IO_PRESSURE) != 0;
        if (ret->have_io_stall)
                stall_delta(&prev->io_pressure, &cur->io_pressure, interval, &ret->io_stall);

        ret->have_memory_current = (prev->have & cur->have & SAMPLE_MEMORY_CURRENT) != 0;
        if (ret->have_memory_current)
                ret->memory_rate = signed_rate(prev->memory_current, cur->memory_current, interval);
        ret->have_memory_stat = (prev->have & cur->have & SAMPLE_MEMORY_STAT) != 0;
        if (ret->have_memory_stat) {
                ret->dirty_rate = signed_rate(sample_dirty_bytes(prev), sample_dirty_bytes(cur), interval);
                ret->refault_rate = stat_rate(prev, cur, STAT_WORKINGSET_REFAULT_FILE, interval, page_size);
                ret->scan_rate = stat_rate(prev, cur, STAT_PGSCAN, interval, page_size);
                ret->steal_rate = stat_rate(prev, cur, STAT_PGSTEAL, interval, page_size);
        }
        r = derive_devices(prev, cur, interval, ret);
        if (r < 0)
                ret->valid = false;
        return r;
}

static bool has_vm(const SystemSample *s, VmstatKey k) {
        return (s->have & SYSTEM_VMSTAT) && (s->vmstat_found & (UINT64_C(1) << k));
}

void system_signals_derive(const SystemSample *prev, uint64_t prev_usec, const SystemSample *cur,
                           uint64_t cur_usec, uint64_t page_size, SystemSignals *ret) {
        uint64_t interval = u64_delta(cur_usec, prev_usec);

        memset(ret, 0, sizeof(*ret));
        if (has_vm(cur, VMSTAT_NR_DIRTY) && has_vm(cur, VMSTAT_NR_WRITEBACK))
                ret->dirty_bytes = (cur->vmstat[VMSTAT_NR_DIRTY] + cur->vmstat[VMSTAT_NR_WRITEBACK]) * page_size;
        if (has_vm(cur, VMSTAT_NR_DIRTY_THRESHOLD))
                ret->dirty_threshold_bytes = cur->vmstat[VMSTAT_NR_DIRTY_THRESHOLD] * page_size;
        if (has_vm(cur, VMSTAT_NR_DIRTY_BACKGROUND_THRESHOLD))
                ret->dirty_background_threshold_bytes = cur->vmstat[VMSTAT_NR_DIRTY_BACKGROUND_THRESHOLD] * page_size;
        if (interval == 0)
                return;
        ret->valid = true;
        ret->interval_usec = interval;
        ret->have_memory_stall = (prev->have & cur->have & SYSTEM_MEMORY_PRESSURE) != 0;
        if (ret->have_memory_stall)
                stall_delta(&prev->memory_pressure, &cur->memory_pressure, interval, &ret->memory_stall);
        ret->have_io_stall = (prev->have & cur->have & SYSTEM_IO_PRESSURE) != 0;
        if (ret->have_io_stall)
                stall_delta(&prev->io_pressure, &cur->io_pressure, interval, &ret->io_stall);
        if (has_vm(prev, VMSTAT_WORKINGSET_REFAULT_FILE) && has_vm(cur, VMSTAT_WORKINGSET_REFAULT_FILE))
                ret->refault_rate = rate_per_sec(u64_delta(cur->vmstat[VMSTAT_WORKINGSET_REFAULT_FILE],
                                                           prev->vmstat[VMSTAT_WORKINGSET_REFAULT_FILE]) * page_size,
                                                 interval);
}
