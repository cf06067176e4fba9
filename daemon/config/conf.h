/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's configuration: mdreclaimd.conf with its drop-ins, and the
 * per-service policies of policies.d/, read from /usr/lib, /run and /etc
 * (later wins; a file of the same name in a later directory masks the
 * earlier one). A Config is built whole and validated before anyone uses it,
 * so a reload either swaps in a complete new one or changes nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf-file.h"
#include "conf-limits.h"
#include "fs-type.h"
#include "util.h"
#include "policy.h"

#define CONFIG_MAIN_FILE "mdreclaimd.conf"
#define CONFIG_DROPIN_DIR "mdreclaimd.conf.d"
#define CONFIG_POLICY_DIR "policies.d"

typedef struct MetricsSettings {
        uint32_t top_cgroups;                   /* exported beside the governed ones */
        MetricsTopBy top_by;
        char *textfile_dir;                     /* NULL: no textfile */
        uint64_t textfile_interval_usec;
} MetricsSettings;

typedef struct DaemonSettings {
        uint64_t interval_usec;
        uint64_t rescan_interval_usec;
        uint64_t cold_interval_usec;    /* how often a cgroup no point governs is sampled */
        uint32_t cold_budget_ppm;       /* ... at most this share of one core on those samples */
        uint64_t pressure_window_usec;          /* PSI trigger window */
        uint32_t system_pressure_threshold_ppm; /* host memory/io "some" trigger */
        int log_level;
        char *cgroup_root;      /* NULL: find the cgroup2 mount */
        char *control_socket;   /* NULL: CONTROL_SOCKET_DEFAULT */
        char *admin_group;      /* group name or GID whose members may mutate; NULL: root only */
        /* [WritePoint] */
        uint32_t io_pressure_limit_ppm;         /* default of a policy's IOPressureLimit= */
        uint32_t write_rate_min_ppm;            /* default floor of a cap, share of the device */
        uint64_t cap_hold_usec;
        uint32_t global_dirty_guard_ppm;
        uint32_t guard_rate_ppm;                /* writers beside an active protected cgroup, share of
                                                 * the device; 0: capped only once it stalls */
        bool manage_queue_depth;                /* a shallow device queue while a protected cgroup is active */
        bool cap_writers_without_policy;        /* cgroups under no policy are capped for protected ones too */
        uint64_t io_latency_target_usec;        /* default of a policy's IOLatencyTarget=; 0: unset,
                                                 * POLICY_LATENCY_OFF: off (the stall share rules) */
        uint64_t fs_latency_target_usec[_FS_TYPE_MAX]; /* where both of those are unset and the queue is
                                                 * not managed: the target of a protected cgroup doing
                                                 * io on a device with this filesystem; 0: none */
        /* [AllocationPoint] */
        uint32_t mem_available_min_ppm;         /* host pressure below this share of MemTotal */
        uint64_t throttle_hold_usec;
        /* [Metrics] */
        MetricsSettings metrics;
        /* [History] */
        uint32_t history_samples;               /* per track; 0: no history */
        uint32_t history_cgroups;               /* cgroups with a track, besides the host */
        uint64_t history_save_interval_usec;    /* written this often besides at stop; 0: at stop only */
} DaemonSettings;

typedef struct Config {
        DaemonSettings daemon;
        Policy **policies;      /* sorted by name */
        size_t n_policies;
        char **files;           /* every file read, in the order read */
        size_t n_files;
} Config;

/* The three configuration directories, lowest priority first. */
extern const char *const config_dirs[3];

/*
 * Reads and validates the whole configuration below `root` (NULL or "/" for
 * the real one). On success returns 0 and a new Config. On any error returns
 * a negative errno, leaves every problem in `diag`, and returns no Config.
 */
int config_load(const char *root, Config **ret, ConfDiag *diag);

/*
 * As config_load(), with policies.d/`policy_name`.conf read from
 * `policy_path` instead of the directories (NULL: as if it did not exist).
 * Used to validate a candidate policy file before it replaces the real one.
 */
int config_load_with_policy(const char *root, const char *policy_name, const char *policy_path,
                            Config **ret, ConfDiag *diag);

/* Whether IOLatencyTargetByFilesystem= can apply at all: [WritePoint] sets no IOLatencyTarget= (nor
 * off) and the device queues are not managed (the stall share did better with them on btrfs too). */
static inline bool fs_latency_targets_apply(const DaemonSettings *d) {
        return !d->io_latency_target_usec && !d->manage_queue_depth;
}

/* The keys a [Policy] section takes, Match first; NULL past the end. */
const char *config_policy_key(size_t i);

Config *config_free(Config *c);
static inline void config_freep(Config **c) {
        if (*c)
                config_free(*c);
}

const Policy *config_find_policy(const Config *c, const char *path, const char *unit);
