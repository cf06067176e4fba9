/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "plan.h"

const char *point_action_to_string(PointActionKind k) {
        static const char *const names[_PA_KIND_MAX] = {
                [PA_SET_CAP] = "cap-writes",
                [PA_LIFT_CAP] = "lift-cap",
                [PA_SET_BUDGET] = "dirty-budget",
                [PA_LIFT_BUDGET] = "lift-dirty-budget",
                [PA_WRITEBACK] = "writeback",
                [PA_SET_QUEUE] = "shallow-queue",
                [PA_LIFT_QUEUE] = "restore-queue",
                [PA_RECLAIM] = "reclaim",
                [PA_SET_HIGH] = "throttle-allocations",
                [PA_LIFT_HIGH] = "lift-allocation-throttle",
        };
        return (unsigned) k < _PA_KIND_MAX ? names[k] : NULL;
}

bool point_action_lifts(PointActionKind k) {
        return k == PA_LIFT_CAP || k == PA_LIFT_BUDGET || k == PA_LIFT_QUEUE || k == PA_LIFT_HIGH;
}

unsigned point_action_index(PointActionKind k) {
        return k >= PA_RECLAIM ? k - PA_RECLAIM : k - PA_SET_CAP;
}

void plan_reset(PointPlan *p, size_t max) {
        p->n = 0;
        p->max = max < PLAN_ACTIONS_MAX ? max : PLAN_ACTIONS_MAX;
        p->truncated = false;
}

PointAction *plan_add(PointPlan *p, PointActionKind kind, uint64_t cgroup_id, const char *path, const Policy *policy) {
        PointAction *a;

        if (p->n >= p->max) {
                p->truncated = true;
                return NULL;
        }
        a = &p->actions[p->n++];
        *a = (PointAction) {
                .kind = kind, .cgroup_id = cgroup_id, .path = path,
                .observe = policy && policy->mode == POLICY_MODE_OBSERVE, .previous = UINT64_MAX,
        };
        return a;
}
