/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "conf.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf-dirs.h"
#include "conf-keys.h"
#include "conf-values.h"
#include "log.h"
#include "policy-format.h"
#include "util.h"

const char *const config_dirs[3] = {
        "/usr/lib/mdreclaim",
        "/run/mdreclaim",
        "/etc/mdreclaim",
};

/* ---- the key tables ---- */

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
        { "Daemon", "ColdSampleBudget", cv_percent_nonzero, offsetof(DaemonSettings, cold_budget_ppm),
          "a percentage of one core above 0% (e.g. 0.5%)" },
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
        { "Policy", "CapWrites", cv_bool, offsetof(Policy, cap_writes), "yes or no" },
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

_Static_assert(ELEMENTSOF(policy_keys) < CONF_KEYS_MAX && ELEMENTSOF(daemon_keys) < CONF_KEYS_MAX,
               "the per-file seen mask holds 64 keys");

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

        if (conf_file_is_masked(path))
                return 0;
        r = config_note_file(c, path);
        if (r < 0)
                return r;
        r = conf_file_parse(path, daemon_sections, conf_key_handler, &kp, diag);
        return r == -ENOMEM ? r : 0;
}

static int config_load_daemon(Config *c, const char *root, ConfDiag *diag) {
        ConfFileList dropins = {};
        int r;

        /* The main file of the highest-priority directory masks the others. */
        for (size_t i = ELEMENTSOF(config_dirs); i > 0; i--) {
                _cleanup_free_ char *path = conf_path_join(root, config_dirs[i - 1] + 1, CONFIG_MAIN_FILE);
                if (!path)
                        return -ENOMEM;
                if (access(path, F_OK) < 0)
                        continue;
                r = config_parse_daemon_file(c, path, diag);
                if (r < 0)
                        return r;
                break;
        }

        r = conf_file_list_collect(root, config_dirs, ELEMENTSOF(config_dirs), CONFIG_DROPIN_DIR, &dropins, diag);
        for (size_t i = 0; r >= 0 && i < dropins.n; i++)
                r = config_parse_daemon_file(c, dropins.files[i].path, diag);
        conf_file_list_clear(&dropins);
        return r;
}

static bool policy_name_valid(const char *name) {
        return *name && strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789-_.@") == strlen(name);
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
                conf_diag_add(diag, p->file, conf_key_line(kp, "DirtyBackground"),
                              "DirtyBackground=%s is above DirtyLimit=%s (%s:%u); background writeback must "
                              "start below the limit", v_bg, v_lim, p->file, conf_key_line(kp, "DirtyLimit"));
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

        if (conf_file_is_masked(path))
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
        (*p)->mode_line = conf_key_line(kp, "Mode");
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
        r = conf_file_parse_text(path, text, size, policy_sections, conf_key_handler, &kp, diag);
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
                .cold_budget_ppm = COLD_BUDGET_DEFAULT_PPM,
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
        r = conf_file_list_collect(root, config_dirs, ELEMENTSOF(config_dirs), CONFIG_POLICY_DIR, &policies,
                                   diag);
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
