/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The manager's side of the cgroups the observer finds: their policies
 * attached, the events of cgroup directories read on the loop, and a tick
 * asked for at once when new cgroups arrive, so that the points see a new
 * cgroup within a fraction of a second, not at the next rescan.
 */
#pragma once

#include <stdbool.h>

#include "manager-state.h"

/* Between a tick and one asked for by manager_request_tick(), at least this long. */
#define MANAGER_TICK_REQUEST_GAP_USEC (100 * USEC_PER_MSEC)

/* Matches the cgroup against the policies: its policy, its tier (hot if governed), the event if it changed. */
void manager_attach_policy(Manager *m, CgEntry *e);
/* The same for every cgroup (after a walk or a reload); counts n_with_policy afresh. */
void manager_attach_policies(Manager *m);

/*
 * The cgroups the observer's events added since the last call get their
 * policies (and PSI triggers, with `reconcile`, if one is governed), the
 * removed ones leave the count, and a tick is asked for when any came.
 */
void manager_adopt_news(Manager *m, bool reconcile);

/*
 * Asks for a tick now (a deferred one: at the next turn of the loop, and
 * MANAGER_TICK_REQUEST_GAP_USEC after the last tick at the earliest), so that
 * the points see what just changed; the ticks' interval then counts from it.
 * Nothing to do while a tick's pass is under way: it samples the new cgroups
 * too (their ids lie ahead of it) and runs the points at its end. Counted in
 * m->ticks_requested.
 */
void manager_request_tick(Manager *m);

/* Reads the events of cgroup directories from the loop (nothing if the observer has no watch fd). */
int manager_watch_cgroups(Manager *m);
