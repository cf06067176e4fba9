/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block devices the cgroups write to, with their completed write rate from
 * /sys/dev/block/M:m/stat (io.stat counts bios at dispatch, which overstates
 * what a throttled device completes) and an estimate of their capacity: the
 * completion rate while the device is saturated, averaged.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "hostfs.h"

#define DEVSTAT_MAX 64
#define DEVSTAT_BUSY_PPM 900000         /* in flight 90 % of a tick: saturated */
/* A saturated device whose writes waited this long each: a write queued there now waits about as long. */
#define DEVSTAT_CONGESTED_WAIT_USEC (250 * 1000)
/* ... and counts as congested this long after the last tick that said so: a queue kept full by a
 * writer measures over the line in some ticks, not all (bench-alloc-stop: 0.3-0.8 s waits, ticks
 * under the line between them). */
#define DEVSTAT_CONGESTED_HOLD_USEC (UINT64_C(5) * 1000 * 1000)
/* Saturated time summed into one figure of the capacity estimate: a device may complete its writes
 * in bursts between ticks that complete none (btrfs under qemu: 0 and 55-64 MiB/s in turn on a
 * 16 MiB/s disk), so a single tick's rate says little. */
#define DEVSTAT_CAPACITY_WINDOW_USEC (UINT64_C(2) * 1000 * 1000)
/* Before a device's first window is whole, the saturated time seen so far gives a first figure once it
 * is this long (the first saturated tick at the default Interval=1s): the guard arms a tick or more
 * sooner on a device never measured, while the backlog it holds back is still being made. */
#define DEVSTAT_PROVISIONAL_USEC (500 * 1000)
/* ... and is at least this: under it the saturation is most likely reads (they count as busy too). */
#define DEVSTAT_PROVISIONAL_MIN (UINT64_C(1) << 20)
/* ... and is dropped after this long without a saturated tick: a figure too low (a tick saturated
 * by reads) would hold the writers under it, the device would not be saturated again, and no window
 * would come to correct it. Dropped, the next flood measures the device whole. */
#define DEVSTAT_PROVISIONAL_HOLD_USEC (UINT64_C(10) * 1000 * 1000)

typedef struct DevStat {
        uint32_t major, minor;
        int fd;
        bool seen;                      /* named by some cgroup's io.stat this tick */
        uint8_t n_samples;
        uint64_t sectors_written, io_ticks_ms, writes, write_ticks_ms, sample_usec;
        uint64_t write_rate;            /* bytes/s completed over the last tick */
        uint64_t congested_usec;        /* the last sample that found it congested (0: none) */
        uint64_t write_wait_usec;       /* the mean time a write completed in the last tick took, queued
                                         * and served; the whole tick if it was busy all of it, with
                                         * requests in flight, and no write completed */
        uint32_t busy_ppm;              /* share of the last tick with io in flight */
        uint64_t capacity;              /* bytes/s, estimate; 0: never seen saturated */
        uint64_t provisional;           /* bytes/s over the saturated time before the first window is
                                         * whole (0: none); never saved, and unused once capacity is set */
        uint64_t unsaturated_usec;      /* time since the last saturated tick, while provisional is set */
        uint64_t window_bytes, window_usec;     /* saturated ticks not yet in the estimate */
} DevStat;

/* The capacity to size caps from: the estimate, or before it the first figure; 0: none. */
static inline uint64_t devstat_capacity(const DevStat *d) {
        return d->capacity ? d->capacity : d->provisional;
}

/* A capacity learnt before: kept while nobody names the device, and over a restart (devstat_save). */
typedef struct DevCapacity {
        uint32_t major, minor;
        uint64_t capacity;
} DevCapacity;

typedef struct DevStatTable {
        DevStat dev[DEVSTAT_MAX];
        size_t n;
        DevCapacity known[DEVSTAT_MAX];
        size_t n_known;
        bool known_changed;             /* by more than a sixteenth since the last save */
        uint64_t sampled_usec;          /* the last devstat_sample() */
} DevStatTable;

void devstat_clear(DevStatTable *t);

/* Starts or keeps following device M:m. Full table: NULL. */
DevStat *devstat_want(DevStatTable *t, uint32_t major, uint32_t minor);
DevStat *devstat_find(DevStatTable *t, uint32_t major, uint32_t minor);

/*
 * The capacities learnt, kept in the state directory so that a restart (and
 * the first cap after it) does not start from nothing: "MAJOR:MINOR
 * BYTES_PER_SEC" lines, '#' comments. devstat_load_text() takes the text of
 * that file (`size` bytes, NUL-terminated; `path` for messages); text that
 * holds any line of another shape, or a NUL, is ignored whole and said so
 * (-EBADMSG). /run is emptied at boot, and device numbers with it.
 */
#define DEVSTAT_FILE_MAX 8192
int devstat_load_text(DevStatTable *t, char *text, size_t size, const char *path);
int devstat_save(DevStatTable *t, const char *path);

/* Rereads every device; drops devices nobody named since the last call. */
void devstat_sample(HostRoot *h, DevStatTable *t, uint64_t now_usec);

/* Saturated (busy DEVSTAT_BUSY_PPM of the last tick) with writes waiting DEVSTAT_CONGESTED_WAIT_USEC or more. */
bool devstat_congested(const DevStat *d);
/* Found congested by a sample less than DEVSTAT_CONGESTED_HOLD_USEC before `now_usec`. */
bool devstat_congested_lately(const DevStat *d, uint64_t now_usec);

/* One tick of the capacity estimate: `bytes` written in `span_usec`, busy `busy_ppm` of it, and
 * whether writes were still waiting at its end (exposed for tests). */
void devstat_capacity_tick(DevStat *d, uint64_t bytes, uint64_t span_usec, uint32_t busy_ppm, bool writes_waiting);
