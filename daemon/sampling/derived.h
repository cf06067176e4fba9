/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Signals derived from two samples of the same cgroup (or of the host) taken
 * one tick apart: stall time from PSI `total` deltas (not the kernel's
 * slowly decaying averages), dirty growth, write rates per device, refault
 * and scan rates, and the reclaimable estimate. Pure functions: samples in,
 * figures out, all in bytes and microseconds.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "device-rate.h"
#include "sampler.h"

typedef struct StallDelta {
        uint64_t some_usec, full_usec;  /* stalled during the interval */
        uint32_t some_ppm, full_ppm;    /* ... as parts per million of it */
} StallDelta;

typedef struct CgroupSignals {
        uint64_t interval_usec;
        StallDelta memory_stall, io_stall;
        int64_t memory_rate;            /* bytes/s of memory.current */
        int64_t dirty_rate;             /* bytes/s of file_dirty + file_writeback */
        uint64_t refault_rate;          /* bytes/s of file pages refaulted */
        uint64_t scan_rate, steal_rate; /* bytes/s */
        uint64_t write_rate;            /* bytes/s over all devices */
        DeviceRate *devices;            /* n_devices of them; the buffer is kept from one derivation to
                                         * the next (devices_alloc), signals_done() frees it */
        uint8_t n_devices, devices_alloc;
        bool valid;                     /* two samples, so rates exist */
        bool have_memory_stall, have_io_stall;
        bool have_memory_current;
        bool have_memory_stat;
} CgroupSignals;

/* Frees the devices' buffer; the signals are then void. */
void signals_done(CgroupSignals *g);

/* file_dirty + file_writeback: what a dirty budget counts. */
uint64_t sample_dirty_bytes(const CgroupSample *s);
/* The file cache that is neither dirty nor under writeback. */
uint64_t sample_clean_file_bytes(const CgroupSample *s);
/* Clean file cache plus reclaimable slab: what reclaim could free cheaply. */
uint64_t sample_reclaimable_bytes(const CgroupSample *s);

/*
 * Derives the signals between `prev` (taken at prev_usec) and `cur`, into
 * `ret` (zeroed before its first use; its devices' buffer is reused). A
 * counter that went backwards (reset) counts as no change, never as a huge
 * delta. page_size converts the kernel's page counts to bytes. -ENOMEM
 * (no room for the devices) leaves the signals void.
 */
int signals_derive(const CgroupSample *prev, uint64_t prev_usec, const CgroupSample *cur,
                    uint64_t cur_usec, uint64_t page_size, CgroupSignals *ret);

void stall_delta(const PsiStats *prev, const PsiStats *cur, uint64_t interval_usec, StallDelta *ret);

/* `delta` events over interval_usec as a per-second rate. */
uint64_t rate_per_sec(uint64_t delta, uint64_t interval_usec);

typedef struct SystemSignals {
        bool valid;
        uint64_t interval_usec;
        bool have_memory_stall, have_io_stall;
        StallDelta memory_stall, io_stall;
        uint64_t dirty_bytes;                   /* (nr_dirty + nr_writeback) in bytes */
        uint64_t dirty_threshold_bytes;
        uint64_t dirty_background_threshold_bytes;
        uint64_t refault_rate;                  /* bytes/s */
} SystemSignals;

void system_signals_derive(const SystemSample *prev, uint64_t prev_usec, const SystemSample *cur,
                           uint64_t cur_usec, uint64_t page_size, SystemSignals *ret);
