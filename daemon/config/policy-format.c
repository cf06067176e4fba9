/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy-format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "util.h"

const char *format_size_exact(char buf[static POLICY_VALUE_MAX], uint64_t bytes) {
        static const char units[] = "EPTGMK";

        if (bytes == UINT64_MAX) {
                snprintf(buf, POLICY_VALUE_MAX, "max");
                return buf;
        }
        for (size_t i = 0; bytes > 0 && i < sizeof(units) - 1; i++) {
                unsigned shift = 10 * (unsigned) (sizeof(units) - 1 - i);
                if (bytes % (UINT64_C(1) << shift) == 0) {
                        snprintf(buf, POLICY_VALUE_MAX, "%" PRIu64 "%c", bytes >> shift, units[i]);
                        return buf;
                }
        }
        snprintf(buf, POLICY_VALUE_MAX, "%" PRIu64, bytes);
        return buf;
}

const char *format_percent(char buf[static POLICY_VALUE_MAX], uint32_t ppm) {
        unsigned frac = ppm % 10000, digits = 4;

        if (frac == 0) {
                snprintf(buf, POLICY_VALUE_MAX, "%" PRIu32 "%%", ppm / 10000);
                return buf;
        }
        while (frac % 10 == 0) {
                frac /= 10;
                digits--;
        }
        snprintf(buf, POLICY_VALUE_MAX, "%" PRIu32 ".%0*u%%", ppm / 10000, (int) digits, frac);
        return buf;
}

static const char *format_size_or_percent(char buf[static POLICY_VALUE_MAX], const SizeOrPercent *v) {
        if (!v->set) {
                buf[0] = '\0';
                return buf;
        }
        return v->is_percent ? format_percent(buf, v->ppm) : format_size_exact(buf, v->bytes);
}

static const char *format_percent_or_unset(char buf[static POLICY_VALUE_MAX], uint32_t ppm) {
        if (ppm == 0) {
                buf[0] = '\0';
                return buf;
        }
        return format_percent(buf, ppm);
}

const char *format_latency(char buf[static POLICY_VALUE_MAX], uint64_t usec) {
        if (usec == 0)
                buf[0] = '\0';
        else if (usec == POLICY_LATENCY_OFF)
                snprintf(buf, POLICY_VALUE_MAX, "off");
        else if (usec % USEC_PER_SEC == 0)
                snprintf(buf, POLICY_VALUE_MAX, "%" PRIu64 "s", usec / USEC_PER_SEC);
        else if (usec % USEC_PER_MSEC == 0)
                snprintf(buf, POLICY_VALUE_MAX, "%" PRIu64 "ms", usec / USEC_PER_MSEC);
        else
                snprintf(buf, POLICY_VALUE_MAX, "%" PRIu64 "us", usec);
        return buf;
}

int policy_format_value(const Policy *p, const char *key, char buf[static POLICY_VALUE_MAX]) {
        if (streq(key, "Mode"))
                snprintf(buf, POLICY_VALUE_MAX, "%s", policy_mode_to_string(p->mode));
        else if (streq(key, "Priority"))
                snprintf(buf, POLICY_VALUE_MAX, "%u", p->priority);
        else if (streq(key, "Protect"))
                snprintf(buf, POLICY_VALUE_MAX, "%s", p->protect ? "yes" : "no");
        else if (streq(key, "DirtyBackground"))
                format_size_or_percent(buf, &p->dirty_background);
        else if (streq(key, "DirtyLimit"))
                format_size_or_percent(buf, &p->dirty_limit);
        else if (streq(key, "WriteRateMin"))
                format_size_or_percent(buf, &p->write_rate_min);
        else if (streq(key, "MetadataCacheMax"))
                format_size_exact(buf, p->metadata_cache_max);
        else if (streq(key, "PressureTarget"))
                format_percent_or_unset(buf, p->pressure_target_ppm);
        else if (streq(key, "ReclaimStepMax"))
                format_size_exact(buf, p->reclaim_step_max);
        else if (streq(key, "CacheFloor"))
                format_size_exact(buf, p->cache_floor);
        else if (streq(key, "CapWrites"))
                snprintf(buf, POLICY_VALUE_MAX, "%s", p->cap_writes ? "yes" : "no");
        else if (streq(key, "AllocationThrottle"))
                snprintf(buf, POLICY_VALUE_MAX, "%s", p->allocation_throttle ? "yes" : "no");
        else if (streq(key, "IOPressureLimit"))
                format_percent_or_unset(buf, p->io_pressure_limit_ppm);
        else if (streq(key, "IOLatencyTarget"))
                format_latency(buf, p->io_latency_target_usec);
        else
                return -ENOENT;
        return 0;
}
