/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point's device queues (ManageQueueDepth=): shallow while a
 * protected cgroup is active on the device, restored after the hold time
 * or once the setting is off.
 */
#include <inttypes.h>
#include <stdio.h>

#include "wp-internal.h"

static WpQueue *queue_of(WritePointState *s, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < s->n_queues; i++)
                if (s->queues[i].major == major && s->queues[i].minor == minor)
                        return &s->queues[i];
        return NULL;
}

/* Whether protected cgroup c is active on its device d: io there, or waiting on io (blocked behind a
 * writer, it completes nothing). */
static bool active_on(const WpCgroup *c, const DeviceRate *d) {
        return d->wbytes_per_sec > 0 || d->rbytes_per_sec > 0 || (c->have_io_stall &&
                                                                  c->io_stall_ppm >= WP_GUARD_WAIT_MIN_PPM);
}

static void shallow_queue(const WpCgroup *c, const DeviceRate *d, WpQueue *q, PointPlan *plan) {
        PointAction *a = wp_plan_add(plan, PA_SET_QUEUE, c);

        if (!a)
                return;
        a->major = d->major;
        a->minor = d->minor;
        a->value = WP_QUEUE_NR_REQUESTS;
        a->queue_kb = WP_QUEUE_MAX_SECTORS_KB;
        a->protected_id = c->id;
        snprintf(a->reason, sizeof(a->reason), "%s does io on %" PRIu32 ":%" PRIu32 ": its queue kept shallow "
                 "(ManageQueueDepth)", c->path, d->major, d->minor);
        snprintf(a->lifts_when, sizeof(a->lifts_when), "when no protected cgroup has done io on %" PRIu32 ":%" PRIu32
                 " for CapHoldTime", d->major, d->minor);
        q->observed = a->observe;
}

static void restore_queue(const WpCgroup *cg, size_t n, WpQueue *q, const char *why, WritePointState *s,
                          PointPlan *plan) {
        PointAction *a = wp_plan_add(plan, PA_LIFT_QUEUE, wp_find_cgroup(cg, n, q->protected_id));

        if (!a)
                return;
        a->cgroup_id = q->protected_id;
        a->observe = false;     /* a lift is never only observed */
        a->major = q->major;
        a->minor = q->minor;
        a->value = UINT64_MAX;
        snprintf(a->reason, sizeof(a->reason), "%s", why);
        *q = s->queues[--s->n_queues];
}

/*
 * Each device a protected cgroup is active on has its queue made shallow
 * from that tick (one decided while the cgroup only observed is asked for
 * once it enforces); restored once nobody protected has been active there
 * for the hold time, or at once when the setting is off.
 */
void wp_decide_queues(const WpCgroup *cg, size_t n, const WpSettings *st, uint64_t now, WritePointState *state,
                      PointPlan *plan) {
        for (size_t i = 0; st->manage_queue_depth && i < n; i++) {
                const WpCgroup *c = &cg[i];

                for (size_t d = 0; c->protect && d < c->n_devices; d++) {
                        const DeviceRate *r = &c->devices[d];
                        WpQueue *q = queue_of(state, r->major, r->minor);
                        bool observe = c->policy->mode == POLICY_MODE_OBSERVE;

                        if (!active_on(c, r))
                                continue;
                        if (!q && state->n_queues < WP_QUEUES_MAX) {
                                q = &state->queues[state->n_queues++];
                                *q = (WpQueue) { .major = r->major, .minor = r->minor, .protected_id = c->id };
                                shallow_queue(c, r, q, plan);
                        } else if (q && q->observed && !observe)
                                shallow_queue(c, r, q, plan);
                        if (q) {
                                q->last_active_usec = now;
                                if (!observe || q->observed)
                                        q->protected_id = c->id;
                        }
                }
        }
        for (size_t i = state->n_queues; i > 0; i--) {
                WpQueue *q = &state->queues[i - 1];

                if (!st->manage_queue_depth)
                        restore_queue(cg, n, q, "ManageQueueDepth is off", state, plan);
                else if (now - q->last_active_usec >= st->hold_usec)
                        restore_queue(cg, n, q, "no protected cgroup has done io there for the hold time", state,
                                      plan);
        }
}

void wp_forget_queue(WritePointState *state, const PointAction *a) {
        WpQueue *q = queue_of(state, a->major, a->minor);

        if (a->kind == PA_SET_QUEUE) {
                /* Asked for again at the next tick the protected cgroup is active there. */
                if (q)
                        *q = state->queues[--state->n_queues];
        } else if (!q && state->n_queues < WP_QUEUES_MAX) {
                /* Lifted again at the next tick, unless a protected cgroup is active there by then. */
                state->queues[state->n_queues++] = (WpQueue) { .major = a->major, .minor = a->minor,
                                                               .protected_id = a->cgroup_id };
        }
}
