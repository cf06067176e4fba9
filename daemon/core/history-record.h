/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What goes into the sample history each tick: the host's figures and those
 * of every cgroup a policy governs, from the observer's newest samples, with
 * the throttles in force from the ledger. Stalls and write rates are derived
 * from the counters the track's previous sample was taken from (its cursor),
 * not from the observer's last two samples: a PSI wake-up between two ticks
 * samples a cgroup too, and its stall must not fall between two samples.
 */
#pragma once

#include <stdint.h>

#include "history.h"
#include "ledger.h"
#include "observer.h"

/* A cgroup's figures now; stalls and rate since `c` (NULL or not valid: none). */
void history_sample_cgroup(const CgEntry *e, const Ledger *l, const HistoryCursor *c, uint64_t page_size,
                           uint64_t realtime_usec, HistorySample *ret);
/* The host's figures now, from /proc (no write rate, no throttles: HISTORY_NONE); stalls since `c`. */
void history_sample_host(const Observer *o, const HistoryCursor *c, uint64_t realtime_usec, HistorySample *ret);
/*
 * Appends the host's sample and one per governed cgroup, and moves their
 * cursors. Returns the number of governed cgroups that found no room (the
 * bound on cgroups with a history), or -ENOMEM.
 */
int history_record(History *h, const Observer *o, const Ledger *l, uint64_t realtime_usec);
