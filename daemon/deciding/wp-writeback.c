/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point's early writeback: a cgroup over DirtyBackground= has its
 * files written back while its devices have room and nobody protected
 * stalls on them, one job at a time per cgroup.
 */
#include <inttypes.h>
#include <stdio.h>

#include "wp-internal.h"

static bool writeback_inflight(const WritePointState *s, uint64_t id) {
        for (size_t i = 0; i < s->n_writeback_inflight; i++)
                if (s->writeback_inflight[i] == id)
                        return true;
        return false;
}

/* Early writeback where it helps: over DirtyBackground, devices with headroom, nobody stalling there. */
void wp_decide_writeback(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                         size_t n_stalls, WritePointState *state, PointPlan *plan) {
        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];
                bool headroom = c->n_devices > 0;
                PointAction *a;

                if (!c->policy->dirty_background.set || !c->have_memory || writeback_inflight(state, c->id) ||
                    c->dirty <= dirty_background_bytes(c) ||
                    state->n_writeback_inflight >= WP_BUDGETS_MAX)
                        continue;
                for (size_t d = 0; d < c->n_devices && headroom; d++) {
                        const WpDevice *x = wp_find_device(dev, n_dev, c->devices[d].major, c->devices[d].minor);
                        for (size_t k = 0; k < n_stalls; k++)
                                headroom &= !(stalls[k].major == c->devices[d].major &&
                                              stalls[k].minor == c->devices[d].minor);
                        headroom &= !x || !x->capacity || x->write_rate < x->capacity / 10 * 9;
                }
                if (!headroom)
                        continue;
                a = wp_plan_add(plan, PA_WRITEBACK, c);
                if (!a)
                        return;
                a->value = c->dirty;
                snprintf(a->reason, sizeof(a->reason), "dirty+writeback %" PRIu64 " over DirtyBackground, devices idle enough",
                         c->dirty);
                state->writeback_inflight[state->n_writeback_inflight++] = c->id;
        }
}

void wp_writeback_done(WritePointState *state, uint64_t id) {
        for (size_t i = 0; i < state->n_writeback_inflight; i++)
                if (state->writeback_inflight[i] == id) {
                        state->writeback_inflight[i] = state->writeback_inflight[--state->n_writeback_inflight];
                        return;
                }
}
