/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-service policies: what one policies.d/NAME.conf says, and which policy
 * governs a cgroup. The most specific match wins: an exact cgroup path, then
 * an exact unit name, then the longest glob; equal matches go to the policy
 * whose name sorts first.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse-util.h"

typedef enum PolicyMode {
        POLICY_MODE_OFF,
        POLICY_MODE_OBSERVE,
        POLICY_MODE_ENFORCE,
        _POLICY_MODE_MAX,
} PolicyMode;

const char *policy_mode_to_string(PolicyMode m);
int policy_mode_from_string(const char *s);

#define POLICY_PRIORITY_MAX 100
#define POLICY_PRIORITY_DEFAULT 50
#define POLICY_MATCH_MAX 64

/*
 * The smallest values of the size keys that become a budget, a cap or a
 * reclaim target; smaller ones are refused with the reason (conf.c, and
 * docs/configuration.md). A percentage that comes to less on a cgroup is
 * raised to the same minimum where it is used.
 */
#define POLICY_DIRTY_LIMIT_MIN (UINT64_C(8) << 20)
#define POLICY_DIRTY_BACKGROUND_MIN (UINT64_C(4) << 20)
#define POLICY_WRITE_RATE_MIN_MIN (UINT64_C(1) << 20)
#define POLICY_METADATA_CACHE_MAX_MIN (UINT64_C(8) << 20)
#define POLICY_RECLAIM_STEP_MAX_MIN (UINT64_C(1) << 20)

typedef struct PolicyMatch {
        char *pattern;
        unsigned line;          /* where it was given, for messages */
} PolicyMatch;

typedef struct Policy {
        char *name;             /* the file name without ".conf" */
        char *file;             /* the file it came from */

        PolicyMatch *matches;
        size_t n_matches;

        PolicyMode mode;
        unsigned mode_line;     /* the line of Mode=; 0: not given, the default */
        unsigned priority;      /* 0..100, higher is more important */
        bool protect;
        bool cap_writes;        /* the write point may cap its cgroups for a protected one (CapWrites=) */

        /* Write point: budgets on file_dirty + file_writeback. */
        SizeOrPercent dirty_background;
        SizeOrPercent dirty_limit;
        SizeOrPercent write_rate_min;   /* floor of a write cap: bytes/s or share of the device */

        /* Allocation point. */
        uint64_t metadata_cache_max;    /* UINT64_MAX: none */
        uint32_t pressure_target_ppm;   /* 0: no proactive reclaim */
        uint64_t reclaim_step_max;
        uint64_t cache_floor;

        /* For a protected cgroup: io stall tolerated before writers beside it
         * are capped. 0: the daemon's [WritePoint] IOPressureLimit=. */
        uint32_t io_pressure_limit_ppm;
        /* For a protected cgroup: the io wait per request it tolerates; its writers' caps follow it
         * instead of the stall share. 0: the daemon's [WritePoint] IOLatencyTarget= (itself 0: off);
         * POLICY_LATENCY_OFF: off whatever the daemon's is. */
        uint64_t io_latency_target_usec;

        /* Slow the cgroup's allocations (memory.high) when its growth drives host pressure. */
        bool allocation_throttle;
} Policy;

#define POLICY_LATENCY_OFF UINT64_MAX

/* A policy with every key at its default. */
Policy *policy_new(const char *name, const char *file);
Policy *policy_free(Policy *p);
static inline void policy_freep(Policy **p) {
        if (*p)
                policy_free(*p);
}

/*
 * Match specificity of `p` for a cgroup at `path` (relative to the cgroup
 * root, starting with "/") whose unit is `unit` (may be NULL). 0 means no
 * match; a higher score is more specific.
 */
uint64_t policy_match_score(const Policy *p, const char *path, const char *unit);

/* The winning policy of `n` for the cgroup, or NULL. */
const Policy *policy_find(Policy *const *policies, size_t n, const char *path, const char *unit);

/* Whether a Match= value is well-formed; on error *ret_why says why. */
bool policy_match_valid(const char *pattern, const char **ret_why);
