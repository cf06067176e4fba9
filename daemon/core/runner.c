/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "runner.h"

const CgroupSample *runner_governed_sample(const CgEntry *e) {
        if (!e->policy || e->policy->mode == POLICY_MODE_OFF || e->gone)
                return NULL;
        return cg_entry_sample(e);
}

void point_counters_count(PointCounters *c, unsigned kind, bool lift, bool observe, int r) {
        if (kind >= POINT_ACTION_KINDS_MAX)
                return;
        if (lift && r > 0)
                c->done[kind]++;
        else if (observe)
                c->observed[kind]++;
        else if (!lift)
                c->done[kind]++;
}
