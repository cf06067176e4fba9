/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The running daemon: one sd-event loop carrying the POSIX signals, the tick
 * that samples every cgroup and runs both points, the rescan that finds new
 * and removed cgroups and attaches policies, the PSI triggers that wake the
 * points at once, and the service manager notifications. It owns the
 * configuration, swaps it whole on reload, and wires the observer, the
 * runners and the actuator together; it decides and writes nothing itself.
 */
#pragma once

#include <stdint.h>

#include "conf.h"
#include "manager-actions.h"
#include "manager-state.h"


/* Takes ownership of `config`. */
int manager_new(const ManagerArgs *args, Config *config, const char *cgroup_root, Manager **ret);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        if (*m)
                manager_free(*m);
}

/* Runs until SIGTERM/SIGINT; returns 0 on a clean stop. */
int manager_run(Manager *m);

/*
 * Reads the configuration again (once); a bad one is refused and the old
 * kept. The diagnostics go to the journal, and to *ret_diag if given (the
 * caller clears it).
 */
int manager_reload(Manager *m, ConfDiag *ret_diag);

/* The rescan's work: find cgroups, attach policies, reconcile triggers. */
int manager_rescan(Manager *m);
/*
 * For a name the control API did not find (a unit started a moment ago):
 * the events of cgroup directories not read yet are taken now. Never a walk,
 * whoever asks. Returns true if cgroups were added or dropped. CgEntry
 * pointers taken before may move.
 */
bool manager_walk_for_lookup(Manager *m);

/* The tick's work at once: sample everything (the rest of a pass in progress), verify throttles, run both points. */
int manager_tick(Manager *m);

/*
 * The tick's work in slices, as the tick timer starts it: a pass begins (or
 * one still open goes on) with one slice now, the slice source runs the rest
 * between the loop's other sources, and the last slice finishes the tick as
 * manager_tick() does. 0 or -ENOMEM.
 */
int manager_tick_slice(Manager *m);

/* Where the throttle ledgers are kept (cleared by a reboot, as the throttles are). */
const char *manager_state_dir(const Manager *m);
/* Where the device capacities and the sample history are kept (they outlive a reboot). */
const char *manager_persistent_dir(const Manager *m);

/* Applies the log level: --log-level wins over LogLevel=. */
void manager_apply_log_level(const ManagerArgs *args, const Config *c);
