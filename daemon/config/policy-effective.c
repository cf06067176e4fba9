/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy-effective.h"

#include <stdio.h>

#include "fs-type.h"
#include "util.h"

bool latency_by_filesystem(const DaemonSettings *d, char buf[static POLICY_VALUE_MAX]) {
        size_t len = 0;

        buf[0] = '\0';
        if (!fs_latency_targets_apply(d))
                return false;
        for (int i = 0; i < _FS_TYPE_MAX && len < POLICY_VALUE_MAX; i++) {
                char v[POLICY_VALUE_MAX];

                if (d->fs_latency_target_usec[i])
                        len += (size_t) snprintf(buf + len, POLICY_VALUE_MAX - len, "%s%s:%s", len ? " " : "",
                                                 fs_type_to_string((FsType) i),
                                                 format_latency(v, d->fs_latency_target_usec[i]));
        }
        return len > 0;
}

int policy_format_effective(const Policy *p, const DaemonSettings *d, const char *key,
                            char buf[static POLICY_VALUE_MAX]) {
        int r = policy_format_value(p, key, buf);

        if (r < 0 || buf[0])
                return r;
        if (streq(key, "IOPressureLimit"))
                format_percent(buf, d->io_pressure_limit_ppm);
        else if (streq(key, "WriteRateMin"))
                format_percent(buf, d->write_rate_min_ppm);
        else if (streq(key, "IOLatencyTarget") && d->io_latency_target_usec)
                format_latency(buf, d->io_latency_target_usec);
        else if (streq(key, "IOLatencyTarget") && !latency_by_filesystem(d, buf))
                format_latency(buf, POLICY_LATENCY_OFF);
        else if (streq(key, "IOLatencyTarget"))
                buf[0] = '\0';         /* unset: by filesystem, which latency_by_filesystem() says */
        return 0;
}
