/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What goes into the sample history each tick: the host's figures and those
 * of every cgroup a policy governs, taken from the observer's newest samples
 * and derived signals, with the throttles in force from the ledger.
 */
#pragma once

#include <stdint.h>

#include "history.h"
#include "ledger.h"
#include "observer.h"

/* One cgroup's figures now: its newest sample and signals, memory.high and the wbps caps in force. */
void history_sample_cgroup(const CgEntry *e, const Ledger *l, uint64_t realtime_usec, HistorySample *ret);
/* The host's figures now, from /proc (no write rate: HISTORY_NONE). */
void history_sample_host(const Observer *o, uint64_t realtime_usec, HistorySample *ret);
/*
 * Appends the host's sample and one per governed cgroup sampled this tick.
 * Returns the number of governed cgroups that found no room (the bound on
 * cgroups with a history), or -ENOMEM.
 */
int history_record(History *h, const Observer *o, const Ledger *l, uint64_t realtime_usec);
