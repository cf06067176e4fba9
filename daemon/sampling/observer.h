/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's picture of the host: every cgroup's newest samples and the
 * signals derived from them, and the same for the host as a whole. A rescan
 * (rare) finds cgroups and reads their limits; a sample pass (every tick, or
 * one cgroup when its PSI trigger fires) rereads counters and derives rates.
 * Steady-state passes allocate nothing.
 */
#pragma once

#include <stdint.h>

#include "cgfs.h"
#include "cgtable.h"
#include "devstat.h"
#include "hostfs.h"
#include "metadata.h"
#include "sampler.h"
#include "derived.h"

typedef struct Observer {
        CgRoot *root;
        HostRoot *host;
        CgTable cgroups;
        uint64_t page_size;

        SystemSample system[2];
        uint64_t system_usec[2];
        uint8_t system_cur, system_n;
        SystemSignals system_signals;
        MetadataView metadata;
        DevStatTable devices;

        size_t gone_last_pass;          /* cgroups found removed by the last sample pass */
} Observer;

int observer_new(const char *cgroup_root, const char *proc_root, const char *sys_root, Observer **ret);
Observer *observer_free(Observer *o);
static inline void observer_freep(Observer **o) {
        if (*o)
                observer_free(*o);
}

/* Finds new and removed cgroups, reads every cgroup's limits. */
int observer_rescan(Observer *o);

/* Samples one cgroup at now_usec and derives its signals. -ENODEV: it is gone. */
int observer_sample_entry(Observer *o, CgEntry *e, uint64_t now_usec);

/* Samples the host and every known cgroup. */
int observer_sample(Observer *o, uint64_t now_usec);

/* The newest system sample, or NULL before the first. */
const SystemSample *observer_system_sample(const Observer *o);
