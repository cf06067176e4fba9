/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The sample history: bounded rings of per-tick figures for the host and for
 * each cgroup a policy governs (at most a set number of them), the older part
 * merged, so that an operator can see what the stalls and the caps did over
 * the last hour. It is
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
#define HISTORY_FILE_VERSION 3
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

/*
 * Two tiers a track: the newest samples as they were taken (the fine ring),
 * and the older part of the span merged `factor` to one (the coarse ring), so
 * that an hour of history costs a fifth of what an hour of ticks would. A
 * merged sample covers the span of its parts: its interval is theirs summed,
 * its stalls summed, its sizes the peak, its write rate the mean over the
 * time (the parts whose rate is unknown count as time, not as rate: an
 * approximation), its memory.high and cap the lowest in force; it is dated by its
 * newest part. The samples that left the fine ring and do not fill a merged
 * one yet are held merged too (`partial`), and given out as one.
 */
typedef struct HistoryTrack {
        char *path;                     /* the cgroup, relative to the cgroup root; NULL: the host */
        HistoryCursor cursor;
        HistoryPacked *ring;            /* the fine tier: `fine` slots */
        size_t oldest;                  /* slot of the oldest sample */
        size_t n;                       /* samples held */
        HistoryPacked *coarse;          /* the coarse tier: `coarse` slots; NULL while it has none */
        size_t coarse_oldest, n_coarse;
        HistoryPacked partial;          /* the next merged sample, of `n_partial` fine ones so far */
        size_t n_partial;
} HistoryTrack;

typedef struct History {
        HistoryTrack host;
        HistoryTrack *tracks;           /* the cgroups' tracks, in the order they came */
        size_t n_tracks;
        size_t capacity;                /* the span a track covers, in samples taken */
        size_t fine;                    /* the newest samples kept as taken */
        size_t factor;                  /* older ones merged this many to one */
        size_t coarse;                  /* merged samples kept: what the rest of the span needs */
        size_t max_cgroups;             /* tracks besides the host's */
} History;

/* The newest samples a default history keeps as taken (ten minutes at the default Interval=), and how many
 * older ones make one (half a minute). */
#define HISTORY_FINE_DEFAULT 600
#define HISTORY_FACTOR_DEFAULT 30

/* An empty history spanning `capacity` samples a track (1..HISTORY_SAMPLES_MAX) for up to max_cgroups
 * cgroups: the newest HISTORY_FINE_DEFAULT as taken, older ones merged HISTORY_FACTOR_DEFAULT to one. */
int history_new(size_t capacity, size_t max_cgroups, History **ret);
/* The same with the tiers given: the newest `fine` (1..capacity) as taken, older merged `factor` (>= 2) to
 * one; fine == capacity: no coarse tier. */
int history_new_tiered(size_t capacity, size_t fine, size_t factor, size_t max_cgroups, History **ret);
/* history_new() for samples taken every interval_usec: fewer merged to one where thirty would span more
 * than a merged sample's interval and stalls hold (32 bits of µs, 71 minutes), none merged where two would. */
int history_new_for_tick(size_t capacity, size_t max_cgroups, uint64_t interval_usec, History **ret);
History *history_free(History *h);
static inline void history_freep(History **h) {
        if (*h)
                history_free(*h);
}

/* The track of `path` (NULL: the host's), or NULL if it has none. */
const HistoryTrack *history_find(const History *h, const char *path);
/* The cursor of the track of `path` (NULL: the host's), or NULL if it has none. */
HistoryCursor *history_cursor(History *h, const char *path);
/* How many samples a track gives out: the merged ones, then those as taken. */
static inline size_t history_track_count(const HistoryTrack *t) {
        return t->n_coarse + (t->n_partial > 0) + t->n;
}
/* The i-th oldest sample of a track (i < history_track_count()), as it was appended (or merged) but for
 * HistoryPacked's rounding. */
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
