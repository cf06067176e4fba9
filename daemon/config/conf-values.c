/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "conf-values.h"

#include <errno.h>
#include <string.h>

#include "conf-limits.h"
#include "fs-type.h"
#include "log.h"
#include "parse-util.h"
#include "policy.h"
#include "util.h"

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
int cv_duration_range(const char *v, void *dest, uint64_t min) {
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
int cv_latency_target(const char *v, void *dest, uint64_t min) {
        return latency_target(v, dest, POLICY_LATENCY_OFF);
}

/* [WritePoint] IOLatencyTargetByFilesystem=: "off", or TYPE:DURATION pairs apart by spaces; each
 * assignment replaces the whole list, and a type named twice, or no pair at all, is an error. */
int cv_fs_latency_targets(const char *v, void *dest, uint64_t min) {
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
int cv_pressure_window(const char *v, void *dest, uint64_t min) {
        return duration_between(v, dest, 500 * USEC_PER_MSEC, 10 * USEC_PER_SEC);
}

int cv_percent_nonzero(const char *v, void *dest, uint64_t min) {
        uint32_t ppm;
        int r = parse_percent(v, &ppm);

        if (r < 0)
                return r;
        if (ppm == 0)
                return -ERANGE;
        *(uint32_t *) dest = ppm;
        return 0;
}

int cv_log_level(const char *v, void *dest, uint64_t min) {
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

int cv_abs_path(const char *v, void *dest, uint64_t min) {
        if (v[0] != '/' || strpbrk(v, " \t"))
                return -EINVAL;
        return set_string(dest, v);
}

int cv_socket_path(const char *v, void *dest, uint64_t min) {
        /* sun_path holds 108 bytes with the terminating NUL. */
        if (strlen(v) >= 108)
                return -ENAMETOOLONG;
        return cv_abs_path(v, dest, 0);
}

int cv_group(const char *v, void *dest, uint64_t min) {
        size_t l = strlen(v);

        if (l == 0 || l > 32 || v[0] == '-' ||
            strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != l)
                return -EINVAL;
        return set_string(dest, v);
}

/* An absolute directory, or nothing (unset: the feature is off). */
int cv_abs_path_or_empty(const char *v, void *dest, uint64_t min) {
        char **p = dest;

        if (*v)
                return cv_abs_path(v, dest, 0);
        free(*p);
        *p = NULL;
        return 0;
}

/* TextfileInterval=: a file written more often than anyone scrapes it is wasted. */
int cv_textfile_interval(const char *v, void *dest, uint64_t min) {
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

int cv_top_cgroups(const char *v, void *dest, uint64_t min) {
        return count_up_to(v, METRICS_TOP_CGROUPS_MAX, dest);
}

int cv_history_samples(const char *v, void *dest, uint64_t min) {
        return count_up_to(v, HISTORY_SAMPLES_MAX, dest);
}

/* SaveInterval=: 0 (at stop only), or 1s to 1h. */
int cv_history_save_interval(const char *v, void *dest, uint64_t min) {
        if (streq(v, "0")) {
                *(uint64_t *) dest = 0;
                return 0;
        }
        return duration_between(v, dest, USEC_PER_SEC, INTERVAL_MAX_USEC);
}

int cv_history_cgroups(const char *v, void *dest, uint64_t min) {
        return count_up_to(v, HISTORY_CGROUPS_MAX, dest);
}

static const char *const top_by_names[_METRICS_TOP_MAX] = {
        [METRICS_TOP_MEMORY] = "memory",
        [METRICS_TOP_DIRTY] = "dirty",
        [METRICS_TOP_SLAB] = "slab",
        [METRICS_TOP_IO_STALL] = "io_stall",
};

static int metrics_top_by_from_string(const char *s) {
        for (int k = 0; k < _METRICS_TOP_MAX; k++)
                if (streq(s, top_by_names[k]))
                        return k;
        return -EINVAL;
}

int cv_top_by(const char *v, void *dest, uint64_t min) {
        int k = metrics_top_by_from_string(v);

        if (k < 0)
                return k;
        *(MetricsTopBy *) dest = (MetricsTopBy) k;
        return 0;
}

int cv_mode(const char *v, void *dest, uint64_t min) {
        int m = policy_mode_from_string(v);

        if (m < 0)
                return m;
        *(PolicyMode *) dest = (PolicyMode) m;
        return 0;
}

int cv_priority(const char *v, void *dest, uint64_t min) {
        uint64_t u;
        int r = parse_uint_range(v, 0, POLICY_PRIORITY_MAX, &u);

        if (r < 0)
                return r;
        *(unsigned *) dest = (unsigned) u;
        return 0;
}

int cv_bool(const char *v, void *dest, uint64_t min) {
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

int cv_size(const char *v, void *dest, uint64_t min) {
        return size_at_least(v, false, min, dest);
}

/* A size, or max (none). */
int cv_size_or_max(const char *v, void *dest, uint64_t min) {
        return size_at_least(v, true, min, dest);
}

/* A size of at least min, or a percentage above 0% when there is a minimum. */
int cv_size_or_percent(const char *v, void *dest, uint64_t min) {
        SizeOrPercent u;
        int r = parse_size_or_percent(v, &u);

        if (r < 0)
                return r;
        if (u.is_percent ? min > 0 && u.ppm == 0 : u.bytes < min)
                return -EDOM;
        *(SizeOrPercent *) dest = u;
        return 0;
}

int cv_percent(const char *v, void *dest, uint64_t min) {
        return parse_percent(v, dest);
}

bool cv_takes_size(ConfValueParser parse) {
        return parse == cv_size || parse == cv_size_or_max || parse == cv_size_or_percent;
}
