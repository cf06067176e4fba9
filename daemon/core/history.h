/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sample history: one bounded ring of per-tick figures for the host and
 * for each cgroup a policy governs (at most a set number of them), so that an
 * operator can see what the stalls and the caps did over the last hour. It is
 * written to a file at stop (atomically, beside the throttle ledger) and read
 * back at start; a file that is not whole, not ours or of another version is
 * refused as a whole, never half trusted. The store allocates a cgroup's ring
 * when the cgroup first gets one and never grows past its bounds.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"
#include "sampler.h"

#define HISTORY_FILE_NAME "history"
#define HISTORY_FILE_VERSION 2
/* A figure not known (the host's write rate) or not set (memory.high "max", no wbps cap). */
#define HISTORY_NONE UINT64_MAX

/* One tick's figures of a cgroup or the host, as the store gives them out. */
typedef struct HistorySample {
        uint64_t realtime_usec;         /* CLOCK_REALTIME when taken */
        uint64_t interval_usec;         /* the span the stalls and the rate cover; 0: none yet */
        uint64_t memory_bytes;          /* memory.current; the host: MemTotal - MemAvailable */
        uint64_t file_bytes;            /* file cache; the host: Cached */
        uint64_t dirty_bytes;           /* file_dirty + file_writeback */
        uint64_t slab_reclaimable_bytes;
        uint64_t memory_stall_usec;     /* PSI memory "some" stall during the interval */
        uint64_t io_stall_usec;         /* PSI io "some" stall during the interval */
        uint64_t write_rate;            /* bytes/s over all devices */
        uint64_t memory_high;           /* memory.high in force */
        uint64_t wbps_cap;              /* the lowest io.max wbps= the daemon holds on the cgroup */
} HistorySample;

/*
 * The counters a track's newest sample was derived from, so that the next
 * covers everything since (a PSI wake-up may sample a cgroup between two
 * ticks). Kept in memory only: the first sample after a start has none.
 */
typedef struct HistoryCursor {
        bool valid;
        uint64_t monotonic_usec;        /* when those counters were read */
        CgroupSample cgroup;            /* a cgroup's track */
        SystemSample system;            /* the host's */
} HistoryCursor;

/*
 * A sample as the ring and the file hold it: 48 bytes against the 88 of a
 * HistorySample. Sizes in KiB and rates in KiB/s, rounded to the nearest
 * (memory figures are whole pages, so exact; a rate or a cap is off by half
 * a KiB/s at most), times in µs; UINT32_MAX is HISTORY_NONE, and a figure
 * past what 32 bits hold (4 TiB, 71 minutes) is held at the largest.
 */
typedef struct HistoryPacked {
        uint64_t realtime_usec;
        uint32_t interval_usec;
        uint32_t memory_kib, file_kib, dirty_kib, slab_reclaimable_kib;
        uint32_t memory_stall_usec, io_stall_usec;
        uint32_t write_rate_kib;
        uint32_t memory_high_kib;
        uint32_t wbps_cap_kib;
} HistoryPacked;

typedef struct HistoryTrack {
        char *path;                     /* the cgroup, relative to the cgroup root; NULL: the host */
        HistoryCursor cursor;
        HistoryPacked *ring;            /* `capacity` slots */
        size_t oldest;                  /* slot of the oldest sample */
        size_t n;                       /* samples held */
} HistoryTrack;

typedef struct History {
        HistoryTrack host;
        HistoryTrack *tracks;           /* the cgroups' tracks, in the order they came */
        size_t n_tracks;
        size_t capacity;                /* samples per track */
        size_t max_cgroups;             /* tracks besides the host's */
} History;

/* An empty history of `capacity` samples per track (1..HISTORY_SAMPLES_MAX) for up to max_cgroups cgroups. */
int history_new(size_t capacity, size_t max_cgroups, History **ret);
History *history_free(History *h);
static inline void history_freep(History **h) {
        if (*h)
                history_free(*h);
}

/* The track of `path` (NULL: the host's), or NULL if it has none. */
const HistoryTrack *history_find(const History *h, const char *path);
/* The cursor of the track of `path` (NULL: the host's), or NULL if it has none. */
HistoryCursor *history_cursor(History *h, const char *path);
/* The i-th oldest sample of a track (i < t->n), as it was appended but for HistoryPacked's rounding. */
HistorySample history_track_get(const History *h, const HistoryTrack *t, size_t i);
/*
 * Appends a sample to the track of `path` (NULL: the host's), the oldest
 * falling out of a full ring. A cgroup without a track gets one; when all
 * are taken, the track whose newest sample is the oldest is given up, unless
 * it holds a sample as new as `s` (then -ENOSPC: every track is in use this
 * round). -ENOMEM. A track stays in time order: its samples dated after `s`
 * (the clock was ahead when they were taken) are dropped first, and so are
 * those of a track given up that are dated after `s`.
 */
int history_append(History *h, const char *path, const HistorySample *s);

/* Writes the whole history to `f` (the format is history.c's). Negative errno. */
int history_save(const History *h, FILE *f);
/*
 * Reads what history_save() wrote into the empty `h`, keeping the newest
 * samples that fit its capacity and the first tracks that fit its bound; in
 * each track, a sample older than one before it drops the newer ones.
 * -EBADMSG: not a history file, cut short, too large or damaged;
 * -EPROTONOSUPPORT: another version. On error `h` is left empty.
 */
int history_load(History *h, FILE *f);

/* Writes the history to dir/HISTORY_FILE_NAME atomically (a new temporary file renamed over it). */
int history_write_file(const History *h, const char *dir);
/* Removes dir/HISTORY_FILE_NAME (the history is off): 1 if there was one, 0 if not, or negative errno. */
int history_remove_file(const char *dir);
/* Reads dir/HISTORY_FILE_NAME into the empty `h`; 0 also when there is none. Errors as history_load(). */
int history_read_file(History *h, const char *dir);
