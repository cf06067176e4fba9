/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "runner.h"

const CgroupSample *runner_governed_sample(const CgEntry *e) {
        if (!e->policy || e->policy->mode == POLICY_MODE_OFF || e->gone)
                return NULL;
        return cg_entry_sample(e);
}
