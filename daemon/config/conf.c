/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "conf.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "log.h"
#include "parse-util.h"
#include "policy-format.h"
#include "util.h"

const char *const config_dirs[3] = {
        "/usr/lib/mdreclaim",
        "/run/mdreclaim",
        "/etc/mdreclaim",
};

/* ---- value parsers: (value, destination, the key's minimum) → 0 or negative errno ---- */

/* -EDOM: a size below the key's minimum (or 0% where a minimum applies); the caller says why. */
typedef int (*ConfValueParser)(const char *value, void *dest, uint64_t min);

static int duration_between(const char *v, void *dest, uint64_t min, uint64_t max) {
        uint64_t usec;
        int r = parse_duration(v, &usec);

        if (r < 0)
                return r;
        if (usec < min || usec > max)
                return -ERANGE;
        *(uint64_t *) dest = usec;
        return 0;
}

/* Interval=, RescanInterval=, hold times: 100ms to 1h. */
static int cv_duration_range(const char *v, void *dest, uint64_t min) {
        return duration_between(v, dest, INTERVAL_MIN_USEC, INTERVAL_MAX_USEC);
}

static int latency_target(const char *v, void *dest, uint64_t off) {
        if (streq(v, "off")) {
                *(uint64_t *) dest = off;
                return 0;
        }
        return duration_between(v, dest, IO_LATENCY_TARGET_MIN_USEC, IO_LATENCY_TARGET_MAX_USEC);
}

/* IOLatencyTarget=, of a policy or [WritePoint]: off is kept apart from unset (0), and holds against
 * what would come after it (a target of [WritePoint], those of IOLatencyTargetByFilesystem=). */
static int cv_latency_target(const char *v, void *dest, uint64_t min) {
        return latency_target(v, dest, POLICY_LATENCY_OFF);
}

/* [WritePoint] IOLatencyTargetByFilesystem=: "off", or TYPE:DURATION pairs apart by spaces; each
 * assignment replaces the whole list, and a type named twice, or no pair at all, is an error. */
static int cv_fs_latency_targets(const char *v, void *dest, uint64_t min) {
        uint64_t t[_FS_TYPE_MAX] = {};
        bool named[_FS_TYPE_MAX] = {}, any = false;
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        if (streq(v, "off")) {
                memcpy(dest, t, sizeof(t));
                return 0;
        }
        copy = strdup(v);
        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                char *colon = strchr(w, ':');
                int type, r;

                if (!colon)
                        return -EINVAL;
                *colon = '\0';
                type = fs_type_from_string(w);
                if (type < 0 || named[type])
                        return -EINVAL;
                r = latency_target(colon + 1, &t[type], 0);
                if (r < 0)
                        return r;
                named[type] = true;     /* "btrfs:off": none there */
                any = true;
        }
        if (!any)
                return -EINVAL;
        memcpy(dest, t, sizeof(t));
        return 0;
}

/* What the kernel accepts as a PSI trigger window. */
static int cv_pressure_window(const char *v, void *dest, uint64_t min) {
        return duration_between(v, dest, 500 * USEC_PER_MSEC, 10 * USEC_PER_SEC);
}

static int cv_percent_nonzero(const char *v, void *dest, uint64_t min) {
        uint32_t ppm;
        int r = parse_percent(v, &ppm);

        if (r < 0)
                return r;
        if (ppm == 0)
                return -ERANGE;
        *(uint32_t *) dest = ppm;
        return 0;
}

static int cv_log_level(const char *v, void *dest, uint64_t min) {
        int l = log_level_from_string(v);

        if (l < 0)
                return l;
        *(int *) dest = l;
        return 0;
}

/* Replaces the string at dest with a copy of v. */
static int set_string(void *dest, const char *v) {
        char **p = dest, *copy = strdup(v);

        if (!copy)
                return -ENOMEM;
        free(*p);
        *p = copy;
        return 0;
}

static int cv_abs_path(const char *v, void *dest, uint64_t min) {
        if (v[0] != '/' || strpbrk(v, " \t"))
                return -EINVAL;
        return set_string(dest, v);
}

static int cv_socket_path(const char *v, void *dest, uint64_t min) {
        /* sun_path holds 108 bytes with the terminating NUL. */
        if (strlen(v) >= 108)
                return -ENAMETOOLONG;
        return cv_abs_path(v, dest, 0);
}

static int cv_group(const char *v, void *dest, uint64_t min) {
        size_t l = strlen(v);

        if (l == 0 || l > 32 || v[0] == '-' ||
            strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != l)
                return -EINVAL;
        return set_string(dest, v);
}

/* An absolute directory, or nothing (unset: the feature is off). */
static int cv_abs_path_or_empty(const char *v, void *dest, uint64_t min) {
        char **p = dest;

        if (*v)
                return cv_abs_path(v, dest, 0);
        free(*p);
        *p = NULL;
        return 0;
}

/* TextfileInterval=: a file written more often than anyone scrapes it is wasted. */
static int cv_textfile_interval(const char *v, void *dest, uint64_t min) {
        return duration_between(v, dest, USEC_PER_SEC, INTERVAL_MAX_USEC);
}

/* A count from 0 to max into a uint32_t. */
static int count_up_to(const char *v, uint64_t max, void *dest) {
        uint64_t u;
        int r = parse_uint_range(v, 0, max, &u);

        if (r < 0)
                return r;
        *(uint32_t *) dest = (uint32_t) u;
        return 0;
}

static int cv_top_cgroups(const char *v, void *dest, uint64_t min) {
        return count_up_to(v, METRICS_TOP_CGROUPS_MAX, dest);
}

static int cv_history_samples(const char *v, void *dest, uint64_t min) {
        return count_up_to(v, HISTORY_SAMPLES_MAX, dest);
}

/* SaveInterval=: 0 (at stop only), or 1s to 1h. */
static int cv_history_save_interval(const char *v, void *dest, uint64_t min) {
        if (streq(v, "0")) {
                *(uint64_t *) dest = 0;
                return 0;
        }
        return duration_between(v, dest, USEC_PER_SEC, INTERVAL_MAX_USEC);
}

static int cv_history_cgroups(const char *v, void *dest, uint64_t min) {
        return count_up_to(v, HISTORY_CGROUPS_MAX, dest);
}

static const char *const top_by_names[_METRICS_TOP_MAX] = {
        [METRICS_TOP_MEMORY] = "memory",
        [METRICS_TOP_DIRTY] = "dirty",
        [METRICS_TOP_SLAB] = "slab",
        [METRICS_TOP_IO_STALL] = "io_stall",
};

int metrics_top_by_from_string(const char *s) {
        for (int k = 0; k < _METRICS_TOP_MAX; k++)
                if (streq(s, top_by_names[k]))
                        return k;
        return -EINVAL;
}

static int cv_top_by(const char *v, void *dest, uint64_t min) {
        int k = metrics_top_by_from_string(v);

        if (k < 0)
                return k;
        *(MetricsTopBy *) dest = (MetricsTopBy) k;
        return 0;
}

static int cv_mode(const char *v, void *dest, uint64_t min) {
        int m = policy_mode_from_string(v);

        if (m < 0)
                return m;
        *(PolicyMode *) dest = (PolicyMode) m;
        return 0;
}

static int cv_priority(const char *v, void *dest, uint64_t min) {
        uint64_t u;
        int r = parse_uint_range(v, 0, POLICY_PRIORITY_MAX, &u);

        if (r < 0)
                return r;
        *(unsigned *) dest = (unsigned) u;
        return 0;
}

static int cv_bool(const char *v, void *dest, uint64_t min) {
        return parse_bool(v, dest);
}

static int size_at_least(const char *v, bool allow_max, uint64_t min, uint64_t *dest) {
        uint64_t u;
        int r = parse_size(v, allow_max, &u);

        if (r < 0)
                return r;
        if (u < min)
                return -EDOM;
        *dest = u;
        return 0;
}

static int cv_size(const char *v, void *dest, uint64_t min) {
        return size_at_least(v, false, min, dest);
}

/* A size, or max (none). */
static int cv_size_or_max(const char *v, void *dest, uint64_t min) {
        return size_at_least(v, true, min, dest);
}

/* A size of at least min, or a percentage above 0% when there is a minimum. */
static int cv_size_or_percent(const char *v, void *dest, uint64_t min) {
        SizeOrPercent u;
        int r = parse_size_or_percent(v, &u);

        if (r < 0)
                return r;
        if (u.is_percent ? min > 0 && u.ppm == 0 : u.bytes < min)
                return -EDOM;
        *(SizeOrPercent *) dest = u;
        return 0;
}

static int cv_percent(const char *v, void *dest, uint64_t min) {
        return parse_percent(v, dest);
}

/* ---- the key tables ---- */

typedef struct ConfKeyDef {
        const char *section;
        const char *key;
        ConfValueParser parse;
        size_t offset;
        const char *expected;
        uint64_t min;           /* the smallest size taken (sizes only) */
        const char *min_why;    /* what a smaller one would do */
} ConfKeyDef;

#define EXPECT_SIZE \
        "a size in bytes, optionally with K, M, G, T, P or E (powers of 1024, upper case, as in systemd " \
        "unit files; e.g. 64M, 1.5G)"

static const ConfKeyDef daemon_keys[] = {
        { "Daemon", "Interval", cv_duration_range, offsetof(DaemonSettings, interval_usec),
          "a duration between 100ms and 1h (e.g. 1s, 500ms)" },
        { "Daemon", "LogLevel", cv_log_level, offsetof(DaemonSettings, log_level),
          "a log level: emerg, alert, crit, err, warning, notice, info or debug" },
        { "Daemon", "CgroupRoot", cv_abs_path, offsetof(DaemonSettings, cgroup_root),
          "an absolute path without spaces" },
        { "Daemon", "RescanInterval", cv_duration_range, offsetof(DaemonSettings, rescan_interval_usec),
          "a duration between 100ms and 1h (e.g. 5s)" },
        { "Daemon", "ColdSampleInterval", cv_duration_range, offsetof(DaemonSettings, cold_interval_usec),
          "a duration between 100ms and 1h (e.g. 30s)" },
        { "Daemon", "PressureWindow", cv_pressure_window, offsetof(DaemonSettings, pressure_window_usec),
          "a duration between 500ms and 10s (e.g. 1s)" },
        { "Daemon", "SystemPressureThreshold", cv_percent_nonzero,
          offsetof(DaemonSettings, system_pressure_threshold_ppm),
          "a percentage of time stalled above 0% (e.g. 10%)" },
        { "Daemon", "ControlSocket", cv_socket_path, offsetof(DaemonSettings, control_socket),
          "an absolute path shorter than 108 bytes, without spaces" },
        { "Daemon", "AdminGroup", cv_group, offsetof(DaemonSettings, admin_group),
          "a group name or a numeric GID" },
        { "WritePoint", "IOPressureLimit", cv_percent_nonzero, offsetof(DaemonSettings, io_pressure_limit_ppm),
          "a percentage of time stalled on io above 0% (e.g. 10%)" },
        { "WritePoint", "WriteRateMin", cv_percent_nonzero, offsetof(DaemonSettings, write_rate_min_ppm),
          "a percentage of the device's capacity above 0% (e.g. 10%)" },
        { "WritePoint", "CapHoldTime", cv_duration_range, offsetof(DaemonSettings, cap_hold_usec),
          "a duration between 100ms and 1h (e.g. 10s)" },
        { "AllocationPoint", "MemAvailableMin", cv_percent_nonzero, offsetof(DaemonSettings, mem_available_min_ppm),
          "a percentage of host memory above 0% (e.g. 5%)" },
        { "AllocationPoint", "ThrottleHoldTime", cv_duration_range, offsetof(DaemonSettings, throttle_hold_usec),
          "a duration between 100ms and 1h (e.g. 10s)" },
        { "WritePoint", "GlobalDirtyGuard", cv_percent_nonzero, offsetof(DaemonSettings, global_dirty_guard_ppm),
          "a percentage of the kernel's dirty threshold above 0% (e.g. 80%)" },
        { "WritePoint", "GuardRate", cv_percent, offsetof(DaemonSettings, guard_rate_ppm),
          "a percentage of the device's capacity, 0% to wait for a stall (e.g. 75%)" },
        { "WritePoint", "ManageQueueDepth", cv_bool, offsetof(DaemonSettings, manage_queue_depth), "yes or no" },
        { "WritePoint", "CapWritersWithoutPolicy", cv_bool, offsetof(DaemonSettings, cap_writers_without_policy),
          "yes or no" },
        { "WritePoint", "IOLatencyTarget", cv_latency_target, offsetof(DaemonSettings, io_latency_target_usec),
          "off, or a duration between 1ms and 10s (e.g. 20ms)" },
        { "WritePoint", "IOLatencyTargetByFilesystem", cv_fs_latency_targets,
          offsetof(DaemonSettings, fs_latency_target_usec),
          "off, or TYPE:DURATION pairs apart by spaces, TYPE ext4, xfs or btrfs, once each, DURATION off or "
          "between 1ms and 10s (e.g. btrfs:10ms)" },
        { "Metrics", "TopCgroups", cv_top_cgroups, offsetof(DaemonSettings, metrics.top_cgroups),
          "a number of cgroups from 0 to 1000" },
        { "Metrics", "TopBy", cv_top_by, offsetof(DaemonSettings, metrics.top_by),
          "memory, dirty, slab or io_stall" },
        { "Metrics", "TextfileDirectory", cv_abs_path_or_empty, offsetof(DaemonSettings, metrics.textfile_dir),
          "an absolute path without spaces, or nothing" },
        { "Metrics", "TextfileInterval", cv_textfile_interval,
          offsetof(DaemonSettings, metrics.textfile_interval_usec), "a duration between 1s and 1h (e.g. 15s)" },
        { "History", "Samples", cv_history_samples, offsetof(DaemonSettings, history_samples),
          "a number of samples from 0 (no history) to 86400" },
        { "History", "Cgroups", cv_history_cgroups, offsetof(DaemonSettings, history_cgroups),
          "a number of cgroups from 0 to 256" },
        { "History", "SaveInterval", cv_history_save_interval,
          offsetof(DaemonSettings, history_save_interval_usec),
          "0 (at stop only) or a duration between 1s and 1h (e.g. 5min)" },
};

static const char *const daemon_sections[] = { "Daemon", "WritePoint", "AllocationPoint", "Metrics", "History", NULL };

static const ConfKeyDef policy_keys[] = {
        { "Policy", "Mode", cv_mode, offsetof(Policy, mode), "off, observe or enforce" },
        { "Policy", "Priority", cv_priority, offsetof(Policy, priority), "an integer from 0 to 100" },
        { "Policy", "Protect", cv_bool, offsetof(Policy, protect), "yes or no" },
        { "Policy", "CapWrites", cv_bool, offsetof(Policy, cap_writes), "yes or no" },
        { "Policy", "DirtyBackground", cv_size_or_percent, offsetof(Policy, dirty_background),
          EXPECT_SIZE " or a percentage of the memory limit (e.g. 10%)", POLICY_DIRTY_BACKGROUND_MIN,
          "early writeback of less would add small writes to the disk and free nothing worth it "
          "(the kernel writes back at least 4 MiB of a file at a time)" },
        { "Policy", "DirtyLimit", cv_size_or_percent, offsetof(Policy, dirty_limit),
          EXPECT_SIZE " or a percentage of the memory limit (e.g. 20%)", POLICY_DIRTY_LIMIT_MIN,
          "a smaller dirty budget makes every write of the cgroup wait for the disk: the writer starves "
          "instead of slowing down" },
        { "Policy", "WriteRateMin", cv_size_or_percent, offsetof(Policy, write_rate_min),
          "bytes per second as a size (e.g. 8M), or a percentage of the device (e.g. 10%)",
          POLICY_WRITE_RATE_MIN_MIN, "a write cap under 1M per second stops a writer instead of slowing it" },
        { "Policy", "MetadataCacheMax", cv_size_or_max, offsetof(Policy, metadata_cache_max),
          EXPECT_SIZE ", or max", POLICY_METADATA_CACHE_MAX_MIN,
          "the dentries and inodes a service keeps using would be reclaimed every tick, and each lookup would "
          "go to the disk" },
        { "Policy", "PressureTarget", cv_percent, offsetof(Policy, pressure_target_ppm),
          "a percentage of time stalled, 0% to 100% (e.g. 0.1%)" },
        { "Policy", "ReclaimStepMax", cv_size, offsetof(Policy, reclaim_step_max), EXPECT_SIZE,
          POLICY_RECLAIM_STEP_MAX_MIN,
          "the allocation point asks for no step under 1M (a smaller one costs more than it frees), so a "
          "smaller maximum would silently turn proactive reclaim off" },
        { "Policy", "CacheFloor", cv_size, offsetof(Policy, cache_floor), EXPECT_SIZE " (0: no floor)" },
        { "Policy", "AllocationThrottle", cv_bool, offsetof(Policy, allocation_throttle), "yes or no" },
        { "Policy", "IOPressureLimit", cv_percent_nonzero, offsetof(Policy, io_pressure_limit_ppm),
          "a percentage of time stalled on io above 0% (e.g. 10%)" },
        { "Policy", "IOLatencyTarget", cv_latency_target, offsetof(Policy, io_latency_target_usec),
          "off, or a duration between 1ms and 10s (e.g. 20ms)" },
};

static const char *const policy_sections[] = { "Policy", NULL };

_Static_assert(ELEMENTSOF(policy_keys) < 64 && ELEMENTSOF(daemon_keys) < 64,
               "the per-file seen mask holds 64 keys");

/* What one file's parse needs: where values go and which keys it has seen. */
typedef struct KeyParse {
        const ConfKeyDef *table;
        size_t n_table;
        void *base;
        uint64_t seen;
        unsigned seen_line[64];
        Policy *policy;         /* set for policy files: Match= goes here */
        bool has_section;
} KeyParse;

static void list_expected_keys(const KeyParse *kp, const char *section, char *buf, size_t size) {
        size_t off = 0;

        buf[0] = '\0';
        if (kp->policy)
                off += (size_t) snprintf(buf, size, "Match");
        for (size_t i = 0; i < kp->n_table && off < size; i++)
                if (streq(kp->table[i].section, section))
                        off += (size_t) snprintf(buf + off, size - off, "%s%s",
                                                 off ? ", " : "", kp->table[i].key);
        if (off == 0)
                snprintf(buf, size, "none yet");
}

static int policy_add_matches(Policy *p, const ConfLocation *loc, const char *value, ConfDiag *diag) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL, *word;
        int r = 0;

        if (!copy)
                return -ENOMEM;
        if (!strtok_r(copy, " \t", &save)) {
                conf_diag_add(diag, loc->file, loc->line, "Match=: expected unit names, globs or cgroup paths, got nothing");
                return -EINVAL;
        }
        strcpy(copy, value);
        save = NULL;
        for (word = strtok_r(copy, " \t", &save); word; word = strtok_r(NULL, " \t", &save)) {
                const char *why;
                PolicyMatch *n;

                if (!policy_match_valid(word, &why)) {
                        conf_diag_add(diag, loc->file, loc->line, "Match=: '%s': %s", word, why);
                        r = -EINVAL;
                        continue;
                }
                if (p->n_matches >= POLICY_MATCH_MAX) {
                        conf_diag_add(diag, loc->file, loc->line, "Match=: more than %d patterns in one policy",
                                      POLICY_MATCH_MAX);
                        return -E2BIG;
                }
                n = realloc(p->matches, (p->n_matches + 1) * sizeof(PolicyMatch));
                if (!n)
                        return -ENOMEM;
                p->matches = n;
                p->matches[p->n_matches] = (PolicyMatch) { .pattern = strdup(word), .line = loc->line };
                if (!p->matches[p->n_matches].pattern)
                        return -ENOMEM;
                p->n_matches++;
        }
        return r;
}

/*
 * What a size written the way other tools write them should read here:
 * "64MB", "64MiB", "64m" and "64mb" are "64M" (systemd refuses them as well).
 * False when `value` is not such a slip.
 */
static bool size_slip(const char *value, char *buf, size_t size) {
        size_t digits = strspn(value, "0123456789.");
        const char *unit = value + digits;

        if (digits == 0 || !*unit || !strchr("kmgtpeKMGTPE", *unit))
                return false;
        if (!streq(unit + 1, "") && strcasecmp(unit + 1, "b") != 0 && strcasecmp(unit + 1, "ib") != 0)
                return false;
        snprintf(buf, size, "%.*s%c", (int) digits, value, toupper((unsigned char) *unit));
        return !streq(buf, value);
}

static bool key_takes_size(const ConfKeyDef *k) {
        return k->parse == cv_size || k->parse == cv_size_or_max || k->parse == cv_size_or_percent;
}

static void report_bad_value(const ConfKeyDef *k, const ConfLocation *loc, const char *value, int r,
                             ConfDiag *diag) {
        char min[POLICY_VALUE_MAX], hint[64];
        uint64_t u;

        if (r == -EDOM && strchr(value, '%'))
                conf_diag_add(diag, loc->file, loc->line, "%s=%s is refused: a percentage must be above 0%%, "
                              "and one that comes to less than %s on a cgroup counts as %s there (%s)",
                              k->key, value, format_size_exact(min, k->min), min, k->min_why);
        else if (r == -EDOM)
                conf_diag_add(diag, loc->file, loc->line, "%s=%s is below the minimum of %s: %s", k->key, value,
                              format_size_exact(min, k->min), k->min_why);
        else if (r == -ERANGE && key_takes_size(k) && !strchr(value, '%'))
                conf_diag_add(diag, loc->file, loc->line, "%s=%s is out of range: %s", k->key, value,
                              value[strspn(value, " \t")] == '-' ? "a size cannot be negative" :
                              "a size must come to less than 16E (2^64 bytes), and a fraction counts as a whole "
                              "unit more of its suffix");
        else if (key_takes_size(k) && size_slip(value, hint, sizeof(hint)) && parse_size(hint, false, &u) >= 0)
                conf_diag_add(diag, loc->file, loc->line, "%s=: expected %s, got '%s' (write %s: suffixes are "
                              "upper case and take no B or iB)", k->key, k->expected, value, hint);
        else
                conf_diag_add(diag, loc->file, loc->line, "%s=: expected %s, got '%s'", k->key, k->expected,
                              value);
}

static int key_handler(void *userdata, const ConfLocation *loc, const char *section,
                       const char *key, const char *value, ConfDiag *diag) {
        KeyParse *kp = userdata;
        char expected[512];
        int r;

        kp->has_section = true;
        if (kp->policy && streq(key, "Match"))
                return policy_add_matches(kp->policy, loc, value, diag);

        for (size_t i = 0; i < kp->n_table; i++) {
                const ConfKeyDef *k = &kp->table[i];

                if (!streq(k->section, section) || !streq(k->key, key))
                        continue;
                if (kp->seen & (UINT64_C(1) << i)) {
                        conf_diag_add(diag, loc->file, loc->line, "%s= given twice in [%s] (first at line %u)",
                                      key, section, kp->seen_line[i]);
                        return -EINVAL;
                }
                kp->seen |= UINT64_C(1) << i;
                kp->seen_line[i] = loc->line;
                r = k->parse(value, (char *) kp->base + k->offset, k->min);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        report_bad_value(k, loc, value, r, diag);
                        return -EINVAL;
                }
                return 0;
        }
        list_expected_keys(kp, section, expected, sizeof(expected));
        conf_diag_add(diag, loc->file, loc->line, "unknown key %s= in [%s] (known keys: %s)",
                      key, section, expected);
        return -EINVAL;
}

/* ---- files and directories ---- */

static char *path_join(const char *a, const char *b, const char *c) {
        char *s;

        if (asprintf(&s, "%s%s%s%s%s", a, (b && *b) ? "/" : "", b ? b : "",
                     (c && *c) ? "/" : "", c ? c : "") < 0)
                return NULL;
        return s;
}

/* A file that is a link to /dev/null masks the same name of a lower directory. */
static bool file_is_masked(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

typedef struct ConfFile {
        char *name;
        char *path;
} ConfFile;

typedef struct ConfFileList {
        ConfFile *files;
        size_t n;
} ConfFileList;

static void conf_file_list_clear(ConfFileList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->files[i].name);
                free(l->files[i].path);
        }
        free(l->files);
        *l = (ConfFileList) {};
}

static int conf_file_cmp(const void *a, const void *b) {
        return strcmp(((const ConfFile *) a)->name, ((const ConfFile *) b)->name);
}

static bool name_is_conf(const char *name) {
        size_t l = strlen(name);
        return name[0] != '.' && l > 5 && streq(name + l - 5, ".conf");
}

/* Adds `dir`'s *.conf files, replacing entries of the same name. */
static int conf_file_list_add_dir(ConfFileList *l, const char *dir, ConfDiag *diag) {
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t count = 0;
        int r = 0;

        if (!d)
                return errno == ENOENT ? 0 : (conf_diag_add(diag, dir, 0, "cannot open directory: %m"), -errno);
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                size_t i;

                if (!name_is_conf(de->d_name))
                        continue;
                if (++count > CONFIG_DIR_FILES_MAX) {
                        conf_diag_add(diag, dir, 0, "more than %d *.conf files in one directory: "
                                      "the whole configuration is refused", CONFIG_DIR_FILES_MAX);
                        r = -E2BIG;
                        break;
                }
                path = path_join(dir, de->d_name, NULL);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                for (i = 0; i < l->n && !streq(l->files[i].name, de->d_name); i++)
                        ;
                if (i == l->n) {
                        ConfFile *n = realloc(l->files, (l->n + 1) * sizeof(ConfFile));
                        if (!n || !(n[l->n].name = strdup(de->d_name))) {
                                if (n)
                                        l->files = n;
                                r = -ENOMEM;
                                break;
                        }
                        l->files = n;
                        l->files[l->n++].path = NULL;
                }
                free(l->files[i].path);
                l->files[i].path = TAKE_PTR(path);
        }
        closedir(d);
        return r;
}

static int conf_file_list_collect(const char *root, const char *subdir, ConfFileList *ret, ConfDiag *diag) {
        ConfFileList l = {};
        int r;

        for (size_t i = 0; i < ELEMENTSOF(config_dirs); i++) {
                _cleanup_free_ char *dir = path_join(root, config_dirs[i] + 1, subdir);
                if (!dir) {
                        conf_file_list_clear(&l);
                        return -ENOMEM;
                }
                r = conf_file_list_add_dir(&l, dir, diag);
                if (r == -ENOMEM) {
                        conf_file_list_clear(&l);
                        return r;
                }
        }
        if (l.n > 0)
                qsort(l.files, l.n, sizeof(ConfFile), conf_file_cmp);
        *ret = l;
        return 0;
}

static int config_note_file(Config *c, const char *path) {
        char **n = realloc(c->files, (c->n_files + 1) * sizeof(char *));

        if (!n)
                return -ENOMEM;
        c->files = n;
        c->files[c->n_files] = strdup(path);
        if (!c->files[c->n_files])
                return -ENOMEM;
        c->n_files++;
        return 0;
}

static int config_parse_daemon_file(Config *c, const char *path, ConfDiag *diag) {
        KeyParse kp = {
                .table = daemon_keys, .n_table = ELEMENTSOF(daemon_keys), .base = &c->daemon,
        };
        int r;

        if (file_is_masked(path))
                return 0;
        r = config_note_file(c, path);
        if (r < 0)
                return r;
        r = conf_file_parse(path, daemon_sections, key_handler, &kp, diag);
        return r == -ENOMEM ? r : 0;
}

static int config_load_daemon(Config *c, const char *root, ConfDiag *diag) {
        ConfFileList dropins = {};
        int r;

        /* The main file of the highest-priority directory masks the others. */
        for (size_t i = ELEMENTSOF(config_dirs); i > 0; i--) {
                _cleanup_free_ char *path = path_join(root, config_dirs[i - 1] + 1, CONFIG_MAIN_FILE);
                if (!path)
                        return -ENOMEM;
                if (access(path, F_OK) < 0)
                        continue;
                r = config_parse_daemon_file(c, path, diag);
                if (r < 0)
                        return r;
                break;
        }

        r = conf_file_list_collect(root, CONFIG_DROPIN_DIR, &dropins, diag);
        for (size_t i = 0; r >= 0 && i < dropins.n; i++)
                r = config_parse_daemon_file(c, dropins.files[i].path, diag);
        conf_file_list_clear(&dropins);
        return r;
}

static bool policy_name_valid(const char *name) {
        return *name && strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789-_.@") == strlen(name);
}

/* The line `key` was given on in the file kp parsed; 0 if it was not. */
static unsigned key_line(const KeyParse *kp, const char *key) {
        for (size_t i = 0; i < kp->n_table; i++)
                if (streq(kp->table[i].key, key))
                        return kp->seen & (UINT64_C(1) << i) ? kp->seen_line[i] : 0;
        return 0;
}

/* Cross-key checks of one policy: each names the lines and the values of both keys. */
static int policy_verify(const Policy *p, const KeyParse *kp, ConfDiag *diag) {
        const SizeOrPercent *bg = &p->dirty_background, *lim = &p->dirty_limit;
        char v_bg[POLICY_VALUE_MAX], v_lim[POLICY_VALUE_MAX];
        int r = 0;

        if (p->n_matches == 0) {
                conf_diag_add(diag, p->file, 0, "policy '%s' has no Match=: it would apply to nothing", p->name);
                r = -EINVAL;
        }
        if (bg->set && lim->set && bg->is_percent == lim->is_percent &&
            (bg->is_percent ? bg->ppm > lim->ppm : bg->bytes > lim->bytes)) {
                (void) policy_format_value(p, "DirtyBackground", v_bg);
                (void) policy_format_value(p, "DirtyLimit", v_lim);
                conf_diag_add(diag, p->file, key_line(kp, "DirtyBackground"),
                              "DirtyBackground=%s is above DirtyLimit=%s (%s:%u); background writeback must "
                              "start below the limit", v_bg, v_lim, p->file, key_line(kp, "DirtyLimit"));
                r = -EINVAL;
        }
        return r;
}

/*
 * Reads a policy file. Returns 1 with its text, 0 if it masks the policy (a
 * link to /dev/null, or an empty regular file), or a negative errno after a
 * diagnostic: a FIFO or a device is an error, never a mask.
 */
static int policy_file_read(const char *path, char **ret_text, size_t *ret_size, ConfDiag *diag) {
        _cleanup_free_ char *text = NULL;
        int r;

        if (file_is_masked(path))
                return 0;
        r = conf_file_read(path, CONF_FILE_SIZE_MAX, &text, ret_size, diag);
        if (r < 0)
                return r;
        if (*ret_size == 0)
                return 0;
        *ret_text = TAKE_PTR(text);
        return 1;
}

/* Takes the parsed policy *p if it is whole; its problems went to diag otherwise. */
static int config_add_policy(Config *c, Policy **p, const KeyParse *kp, int parse_result, ConfDiag *diag) {
        Policy **n;

        if (!kp->has_section) {
                conf_diag_add(diag, (*p)->file, 0, "no [Policy] section with keys");
                return 0;
        }
        (*p)->mode_line = key_line(kp, "Mode");
        if (parse_result < 0 || policy_verify(*p, kp, diag) < 0)
                return 0;
        n = realloc(c->policies, (c->n_policies + 1) * sizeof(Policy *));
        if (!n)
                return -ENOMEM;
        c->policies = n;
        c->policies[c->n_policies++] = TAKE_PTR(*p);
        return 0;
}

static int config_load_policy(Config *c, const char *name, const char *path, ConfDiag *diag) {
        _cleanup_(policy_freep) Policy *p = NULL;
        _cleanup_free_ char *pname = strndup(name, strlen(name) - 5), *text = NULL;
        KeyParse kp = { .table = policy_keys, .n_table = ELEMENTSOF(policy_keys) };
        size_t size = 0;
        int r, k;

        if (!pname)
                return -ENOMEM;
        r = policy_file_read(path, &text, &size, diag);
        if (r == 0 || r == -ENOMEM)
                return r;
        k = config_note_file(c, path);
        if (k < 0)
                return k;
        if (r < 0)
                return 0;       /* reported */
        if (!policy_name_valid(pname)) {
                conf_diag_add(diag, path, 0, "policy name '%s' may hold only letters, digits and '-_.@'", pname);
                return 0;
        }
        p = policy_new(pname, path);
        if (!p)
                return -ENOMEM;
        kp.base = kp.policy = p;
        r = conf_file_parse_text(path, text, size, policy_sections, key_handler, &kp, diag);
        return config_add_policy(c, &p, &kp, r, diag);
}

/* One Match= pattern of one policy, for the duplicate check. */
typedef struct MatchClaim {
        const char *pattern;
        size_t policy;          /* index in Config.policies, which are in name order */
        size_t match;           /* index in the policy's matches */
} MatchClaim;

/* By pattern, then in the order the policies claim it. */
static int match_claim_cmp(const void *a, const void *b) {
        const MatchClaim *x = a, *y = b;
        int d = strcmp(x->pattern, y->pattern);

        if (d != 0)
                return d;
        if (x->policy != y->policy)
                return x->policy < y->policy ? -1 : 1;
        return x->match < y->match ? -1 : x->match > y->match;
}

/* Reports claim `later` once for each of the `n_earlier` claims of other policies before it. */
static void report_claim(const Config *c, const MatchClaim *earlier, size_t n_earlier,
                         const MatchClaim *later, ConfDiag *diag) {
        const Policy *b = c->policies[later->policy];
        const PolicyMatch *m = &b->matches[later->match];

        for (size_t i = 0; i < n_earlier; i++) {
                const Policy *a = c->policies[earlier[i].policy];

                if (conf_diag_full(diag)) {
                        diag->n_dropped += n_earlier - i;    /* counted, without a quadratic loop */
                        return;
                }
                conf_diag_add(diag, b->file, m->line, "duplicate policy: Match=%s is already claimed by "
                              "policy '%s' (%s:%u)", m->pattern, a->name, a->file,
                              a->matches[earlier[i].match].line);
        }
}

/*
 * Two policies may not claim the same Match= pattern: which should win? The
 * claims sorted by pattern put equal ones side by side; within them, a claim
 * conflicts with those of the policies before its own.
 */
static int config_verify_unique_matches(const Config *c, ConfDiag *diag) {
        _cleanup_free_ MatchClaim *claims = NULL;
        size_t n = 0, group = 0, run = 0;       /* first claim of a pattern, of its policy */

        for (size_t i = 0; i < c->n_policies; i++)
                n += c->policies[i]->n_matches;
        claims = calloc(MAX(n, 1), sizeof(MatchClaim));
        if (!claims)
                return -ENOMEM;
        n = 0;
        for (size_t i = 0; i < c->n_policies; i++)
                for (size_t j = 0; j < c->policies[i]->n_matches; j++)
                        claims[n++] = (MatchClaim) { c->policies[i]->matches[j].pattern, i, j };
        qsort(claims, n, sizeof(MatchClaim), match_claim_cmp);
        for (size_t i = 1; i < n; i++) {
                if (!streq(claims[i].pattern, claims[group].pattern))
                        group = run = i;
                else if (claims[i].policy != claims[run].policy)
                        run = i;
                report_claim(c, claims + group, run - group, &claims[i], diag);
        }
        return 0;
}

static void config_defaults(DaemonSettings *d) {
        *d = (DaemonSettings) {
                .interval_usec = INTERVAL_DEFAULT_USEC,
                .rescan_interval_usec = RESCAN_INTERVAL_DEFAULT_USEC,
                .cold_interval_usec = COLD_INTERVAL_DEFAULT_USEC,
                .pressure_window_usec = PRESSURE_WINDOW_DEFAULT_USEC,
                .system_pressure_threshold_ppm = SYSTEM_PRESSURE_THRESHOLD_DEFAULT_PPM,
                .io_pressure_limit_ppm = IO_PRESSURE_LIMIT_DEFAULT_PPM,
                .write_rate_min_ppm = 100000,
                .cap_hold_usec = 10 * USEC_PER_SEC,
                .global_dirty_guard_ppm = 800000,
                .guard_rate_ppm = GUARD_RATE_DEFAULT_PPM,
                .cap_writers_without_policy = true,
                .fs_latency_target_usec = { [FS_BTRFS] = IO_LATENCY_TARGET_BTRFS_DEFAULT_USEC },
                .mem_available_min_ppm = 50000,
                .throttle_hold_usec = 10 * USEC_PER_SEC,
                .log_level = LOG_INFO,
                .metrics = { .top_cgroups = METRICS_TOP_CGROUPS_DEFAULT, .top_by = METRICS_TOP_MEMORY,
                             .textfile_interval_usec = METRICS_TEXTFILE_INTERVAL_DEFAULT_USEC },
                .history_samples = HISTORY_SAMPLES_DEFAULT,
                .history_cgroups = HISTORY_CGROUPS_DEFAULT,
                .history_save_interval_usec = HISTORY_SAVE_INTERVAL_DEFAULT_USEC,
        };
}

/* Points policy `name` at `path` (NULL: drops it), as if the directories said so. */
static int conf_file_list_override(ConfFileList *l, const char *name, const char *path) {
        _cleanup_free_ char *file = NULL, *copy = NULL;
        ConfFile *n;
        size_t i;

        if (asprintf(&file, "%s.conf", name) < 0)
                return -ENOMEM;
        for (i = 0; i < l->n && !streq(l->files[i].name, file); i++)
                ;
        if (!path) {
                if (i < l->n) {
                        free(l->files[i].name);
                        free(l->files[i].path);
                        memmove(l->files + i, l->files + i + 1, (l->n - i - 1) * sizeof(ConfFile));
                        l->n--;
                }
                return 0;
        }
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        if (i < l->n) {
                free(l->files[i].path);
                l->files[i].path = TAKE_PTR(copy);
                return 0;
        }
        n = realloc(l->files, (l->n + 1) * sizeof(ConfFile));
        if (!n)
                return -ENOMEM;
        l->files = n;
        l->files[l->n++] = (ConfFile) { .name = TAKE_PTR(file), .path = TAKE_PTR(copy) };
        qsort(l->files, l->n, sizeof(ConfFile), conf_file_cmp);
        return 0;
}

int config_load(const char *root, Config **ret, ConfDiag *diag) {
        return config_load_with_policy(root, NULL, NULL, ret, diag);
}

int config_load_with_policy(const char *root, const char *policy_name, const char *policy_path,
                            Config **ret, ConfDiag *diag) {
        _cleanup_(config_freep) Config *c = calloc(1, sizeof(Config));
        ConfFileList policies = {};
        size_t errors_before = conf_diag_count(diag);
        int r;

        if (!c)
                return -ENOMEM;
        if (!root || streq(root, "/"))
                root = "";
        config_defaults(&c->daemon);

        r = config_load_daemon(c, root, diag);
        if (r < 0)
                return r;
        r = conf_file_list_collect(root, CONFIG_POLICY_DIR, &policies, diag);
        if (r >= 0 && policy_name)
                r = conf_file_list_override(&policies, policy_name, policy_path);
        for (size_t i = 0; r >= 0 && i < policies.n; i++)
                r = config_load_policy(c, policies.files[i].name, policies.files[i].path, diag);
        conf_file_list_clear(&policies);
        if (r >= 0)
                r = config_verify_unique_matches(c, diag);
        if (r < 0)
                return r;

        if (conf_diag_count(diag) > errors_before)
                return -EINVAL;
        *ret = TAKE_PTR(c);
        return 0;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_policies; i++)
                policy_free(c->policies[i]);
        free(c->policies);
        for (size_t i = 0; i < c->n_files; i++)
                free(c->files[i]);
        free(c->files);
        free(c->daemon.cgroup_root);
        free(c->daemon.control_socket);
        free(c->daemon.admin_group);
        free(c->daemon.metrics.textfile_dir);
        free(c);
        return NULL;
}

const char *config_policy_key(size_t i) {
        if (i == 0)
                return "Match";
        return i <= ELEMENTSOF(policy_keys) ? policy_keys[i - 1].key : NULL;
}

const Policy *config_find_policy(const Config *c, const char *path, const char *unit) {
        return policy_find(c->policies, c->n_policies, path, unit);
}
