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
#include <systemd/sd-event.h>

#include "actions.h"
#include "actuator.h"
#include "conf.h"
#include "event-log.h"
#include "history.h"
#include "observer.h"
#include "runner.h"
#include "triggers.h"
#include "unit-watch.h"

typedef struct ManagerArgs {
        const char *config_root;        /* NULL: the real directories */
        const char *cgroup_root;        /* NULL: from the config or discovery */
        const char *proc_root;          /* "/proc" outside tests */
        const char *sys_root;           /* "/sys" outside tests */
        const char *state_dir;          /* the throttle ledger's directory; "/run/mdreclaim" */
        int log_level;                  /* -1: from the config */
} ManagerArgs;

/*
 * A tick samples its cgroups in slices of at most this many sampled cgroups
 * or this long, whichever ends first; the slices after the first run from a
 * source below the PSI triggers' priority (and the control API's), so that a
 * wake-up waits for one slice at most, not for a whole tick.
 */
#define MANAGER_SLICE_CGROUPS 64
#define MANAGER_SLICE_USEC (2 * USEC_PER_MSEC)
#define MANAGER_SLICE_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10)

typedef struct Manager {
        sd_event *event;
        sd_event_source *tick_source;
        sd_event_source *slice_source;  /* the rest of a tick's pass, a slice per dispatch; off between passes */
        sd_event_source *rescan_source;
        sd_event_source *signal_sources[3];

        ManagerArgs args;
        Config *config;
        Observer *observer;
        TriggerSet triggers;
        Actuator *actuator;
        QueueDepth *queues;             /* device queues the write point keeps shallow */
        UnitWatch *units;               /* systemd's stopping units; NULL: no system bus (or a test tree) */
        WriteRunner write_runner;
        AllocRunner alloc_runner;
        EventLog *events;
        History *history;               /* NULL: [History] Samples=0 */
        /* Told whenever the throttles or the releases change (the control API's ThrottlesChanged); may be NULL. */
        void (*throttles_hook)(void *userdata);
        void *throttles_hook_userdata;
        ActionLog actions;              /* an operator's one-shot actions (manager-actions.c) */
        /* Told when one of them finishes (the control API's ActionFinished); may be NULL. */
        void (*action_hook)(const Action *a, void *userdata);
        void *action_hook_userdata;

        uint64_t ticks;                 /* ticks whose pass is done */
        uint64_t slice_longest_usec;    /* the longest slice of the pass in progress (CLOCK_MONOTONIC) */
        uint64_t pass_began_usec;       /* when it began */
        uint64_t policies_walks;        /* the observer's walks when policies were last attached */
        unsigned config_generation;     /* configurations put in force (a reload that took) */
        unsigned policies_generation;   /* ... when policies were last attached; differs: attach again */
        uint64_t trigger_wakeups;
        size_t n_with_policy;
        size_t history_refused_logged;  /* the last count of governed cgroups without room in the history */
        size_t out_of_fds_logged;       /* the last count of cgroups a tick could not open, as logged */
        RateLimit swap_log;             /* a swap disk congested, or no longer */
        uint64_t lookup_walk_usec;      /* CLOCK_MONOTONIC of the last walk a lookup asked for */
        char *status;                   /* last STATUS= sent */
        char *capacities_file;          /* the devices' capacities learnt, in the state directory */
        uint64_t capacities_saved_usec;
        uint64_t history_saved_usec;    /* when the history was last written (CLOCK_MONOTONIC) */
        int history_save_error;         /* the last failure to write it, as logged; 0: none */
} Manager;

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
 * A walk of the tree now, for a name the control API did not find (a unit
 * started since the last rescan): at most one a second, whoever asks.
 * Returns true if it walked. CgEntry pointers taken before may move.
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

/* What the runners and the actuator get from the manager. */
PointContext manager_context(Manager *m);

/* Where the ledger and the history are kept. */
const char *manager_state_dir(const Manager *m);

/* The loop's CLOCK_MONOTONIC now, in µs. */
uint64_t manager_now_usec(Manager *m);

/* Applies the log level: --log-level wins over LogLevel=. */
void manager_apply_log_level(const ManagerArgs *args, const Config *c);

/* ---- an operator's one-shot actions (manager-actions.c) ---- */

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
