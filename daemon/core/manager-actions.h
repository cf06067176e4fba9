/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An operator's one-shot actions: a reclaim or a writeback asked for through
 * the control API, handed to its point's runner under an id, followed through
 * the worker (queued, running) and finished with its figures when the job
 * comes back; whoever listens (the API's ActionFinished) is told.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "manager-state.h"

/*
 * Reclaims `bytes` (0: all reclaimable) of e, or writes back its open files
 * and waits for the writes, as an action asked for by `asked_by` ("uid 0
 * (pid 42)"): *ret is its record, with its id. -EPERM: the cgroup is exempt;
 * -EBUSY: the worker's queue (or the actions kept) is full; -ENODEV: gone.
 */
int manager_reclaim(Manager *m, CgEntry *e, uint64_t bytes, bool cache_only, const char *asked_by,
                    const Action **ret);
int manager_writeback(Manager *m, const CgEntry *e, const char *asked_by, const Action **ret);
/* The action with this id, its state brought up to date (queued or running); NULL if not kept. */
const Action *manager_action(Manager *m, uint64_t id);
/* A job of an action came back: the action ends with its figures. */
void manager_action_job_done(Manager *m, const Job *job);
