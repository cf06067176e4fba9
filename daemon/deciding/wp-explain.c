/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "wp-explain.h"

size_t write_point_caps(const WritePointState *s, uint64_t id, bool for_protected, const WpCap **ret, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_caps; i++) {
                const WpCap *c = &s->caps[i];

                if ((for_protected ? c->protected_id : c->cgroup_id) != id)
                        continue;
                if (ret && n < max)
                        ret[n] = c;
                n++;
        }
        return n;
}

bool write_point_stall_seen(const WritePointState *s, uint64_t id, uint32_t *ret_smooth_ppm,
                            uint32_t *ret_baseline_ppm) {
        for (size_t i = 0; i < s->n_baselines; i++) {
                const WpBaseline *b = &s->baselines[i];

                if (b->cgroup_id != id)
                        continue;
                *ret_smooth_ppm = b->have_smooth ? b->smooth_ppm : 0;
                *ret_baseline_ppm = b->n > 0 ? b->ppm : 0;
                return b->have_smooth;
        }
        return false;
}

bool write_point_device_seen(const WritePointState *s, uint32_t major, uint32_t minor, uint64_t *ret_stall_usec,
                             uint64_t *ret_guarded_usec) {
        for (size_t i = 0; i < s->n_quiet; i++)
                if (s->quiet[i].major == major && s->quiet[i].minor == minor) {
                        *ret_stall_usec = s->quiet[i].last_stall_usec;
                        *ret_guarded_usec = s->quiet[i].last_guarded_usec;
                        return true;
                }
        return false;
}
