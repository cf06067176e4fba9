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
/*
 * The capacity estimate (devstat_capacity_tick()): what the device completed
 * over its saturated time, both summed with the older time weighing less
 * (DEVSTAT_CAPACITY_LIFE_USEC is the mean life of a second in the sums: a
 * half-life of 30 s of saturated time). Unsaturated time does not age them:
 * a device idle for a day keeps what it showed.
 */
#define DEVSTAT_CAPACITY_LIFE_USEC (UINT64_C(43) * 1000 * 1000)
/* The first saturated time of a flood is left out: the page cache and a virtual disk's queue let
 * through more than the disk sustains then (under qemu, 18-23 MB/s for a 16.78 MB/s disk in the first
 * seconds; dd alone settled at 16.0-16.9 in every recorded boot). */
#define DEVSTAT_CAPACITY_SKIP_USEC (UINT64_C(2) * 1000 * 1000)
/* A flood begins after this long unsaturated (and a first figure not confirmed is dropped then: a
 * figure too low, a tick saturated by reads, would hold the writers under it, the device would not
 * be saturated again, and nothing would come to correct it. Dropped, the next flood measures the
 * device whole). */
#define DEVSTAT_PROVISIONAL_HOLD_USEC (UINT64_C(10) * 1000 * 1000)
/* The estimate is set once the sums hold this much saturated time: about 4 s into a device's first
 * flood, and refined from then on. Longer waits give a steadier first estimate (one btrfs boot under
 * qemu read 39 % high 10 s into its flood with 4 s, 10 % with 6 s, alike from 13 s on), but a guard
 * armed from the first figure can end the saturation before they are over, and then nothing is
 * learnt or saved. */
#define DEVSTAT_CAPACITY_MIN_USEC (UINT64_C(2) * 1000 * 1000)
/* A capacity learnt before (the state file) counts as this much saturated time at that rate: the
 * weight the sums settle at, so that a restart does not make the estimate lighter. Seeded with 8 s, a
 * bench's case (a capped writer beside a victim's syncs, the device busy at under its rate) took the
 * guard down twice in 24 s (ext4, 17.4 MB/s learnt: 13.0 → 12.1 → 11.1 MB/s). */
#define DEVSTAT_CAPACITY_SEED_USEC DEVSTAT_CAPACITY_LIFE_USEC
/* Saturated ticks that complete no write while writes wait are held back and counted with the
 * completion that ends them: a device may complete its writes in bursts between such ticks (btrfs
 * under qemu: 0 and 55-64 MB/s in turn on a 16.78 MB/s disk). This long or longer, they are a stuck
 * device, not a slow one, and are not counted. */
#define DEVSTAT_CAPACITY_STUCK_USEC (UINT64_C(4) * 1000 * 1000)
/* Before the estimate is set, the flood's saturated time so far gives a first figure once it is this
 * long (the first saturated tick at the default Interval=1s): the guard arms a tick or more sooner
 * on a device never measured, while the backlog it holds back is still being made. */
#define DEVSTAT_PROVISIONAL_USEC (500 * 1000)
/* ... and is at least this: under it the saturation is most likely reads (they count as busy too). */
#define DEVSTAT_PROVISIONAL_MIN (UINT64_C(1) << 20)

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
        uint64_t provisional;           /* bytes/s over this flood's saturated time before the estimate
                                         * is set (0: none); never saved, unused once capacity is set */
        uint64_t unsaturated_usec;      /* time since the last saturated tick */
        uint64_t flood_bytes, flood_usec;       /* this flood's saturated ticks so far */
        uint64_t waiting_usec;          /* saturated ticks since the last completion, writes waiting */
        double sum_bytes, sum_usec;     /* the estimate's decayed sums (sum_usec 0: not begun) */
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
