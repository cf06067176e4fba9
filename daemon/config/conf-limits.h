/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the configuration's keys may take and what they default to, and the
 * values of [Metrics] TopBy=: shared by the converters of conf-values.c,
 * the directory reader of conf-dirs.c and the settings of conf.h, which
 * includes this header for everyone else.
 */
#pragma once

#include "util.h"

/* Bound on the *.conf files of one directory; more is an error (the configuration is refused). */
#define CONFIG_DIR_FILES_MAX 1024

#define INTERVAL_MIN_USEC (100 * USEC_PER_MSEC)
#define INTERVAL_MAX_USEC (3600 * USEC_PER_SEC)
#define INTERVAL_DEFAULT_USEC USEC_PER_SEC

#define RESCAN_INTERVAL_DEFAULT_USEC (5 * USEC_PER_SEC)
#define COLD_INTERVAL_DEFAULT_USEC (30 * USEC_PER_SEC)
/* The share of a core the cold samples may take (0.5 %): at 10,000 cgroups the round is about 40 s. */
#define COLD_BUDGET_DEFAULT_PPM 5000
#define PRESSURE_WINDOW_DEFAULT_USEC USEC_PER_SEC
#define SYSTEM_PRESSURE_THRESHOLD_DEFAULT_PPM 100000   /* 10% */
#define IO_PRESSURE_LIMIT_DEFAULT_PPM 100000            /* 10% */
#define GUARD_RATE_DEFAULT_PPM 750000                  /* 75% of a device, [WritePoint] GuardRate= */
/* IOLatencyTarget=: under a millisecond is under what one request takes on any disk; over 10 s
 * protects nothing. */
#define IO_LATENCY_TARGET_MIN_USEC 1000
#define IO_LATENCY_TARGET_MAX_USEC (10 * 1000 * 1000)
/* [WritePoint] IOLatencyTargetByFilesystem=: on btrfs, without ManageQueueDepth=, the latency target
 * dominated a static cap at 72 % of the device where the stall share missed its p99 by far (issue
 * 15, docs/write-point.md); on ext4 and xfs the stall share dominated it and the target did not. */
#define IO_LATENCY_TARGET_BTRFS_DEFAULT_USEC (10 * 1000)

/* [History]: samples kept per cgroup (an hour at the default 1 s tick), and cgroups with a history. */
#define HISTORY_SAMPLES_DEFAULT 3600
#define HISTORY_SAMPLES_MAX 86400
#define HISTORY_CGROUPS_DEFAULT 16
#define HISTORY_CGROUPS_MAX 256
/* [History] SaveInterval=: what a crash can lose of the history; 0: written at stop only. */
#define HISTORY_SAVE_INTERVAL_DEFAULT_USEC (5 * 60 * USEC_PER_SEC)

#define METRICS_TOP_CGROUPS_DEFAULT 20
#define METRICS_TOP_CGROUPS_MAX 1000
#define METRICS_TEXTFILE_INTERVAL_DEFAULT_USEC (15 * USEC_PER_SEC)

/* [Metrics] TopBy=: what ranks the cgroups exported beside the governed ones. */
typedef enum MetricsTopBy {
        METRICS_TOP_MEMORY,             /* memory.current */
        METRICS_TOP_DIRTY,              /* file_dirty + file_writeback */
        METRICS_TOP_SLAB,               /* slab_reclaimable */
        METRICS_TOP_IO_STALL,           /* io "some" over the last interval */
        _METRICS_TOP_MAX,
} MetricsTopBy;
