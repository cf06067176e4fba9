/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the running daemon holds (the Manager), and the two views of it that
 * every part of core needs: the context the runners and the actuator get, and
 * the loop's clock. Data only, so that manager.c (the loop) and
 * manager-actions.c (an operator's one-shot actions) both see it without
 * either including the other's header.
 */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#include "actions.h"
#include "actuator.h"
#include "conf.h"
#include "dirty-watch.h"
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
        const char *state_dir;          /* the throttle ledgers' directory; "/run/mdreclaim" (a reboot clears
                                         * the throttles, and so their records) */
        const char *persistent_dir;     /* what outlives a reboot: device capacities, the sample history;
                                         * NULL: state_dir */
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
        sd_event_source *cgroup_events_source;  /* the inotify fd of cgroup directories (manager-cgroups.c) */
        DirtyWatch dirty_watch;         /* a writer's first burst between ticks, while a guard stands */
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
        uint64_t tick_fired_usec;       /* when the tick timer last fired (CLOCK_MONOTONIC) */
        uint64_t ticks_requested;       /* ticks asked for at once (manager_request_tick: new cgroups) */
        uint64_t slice_longest_usec;    /* the longest slice of the pass in progress (CLOCK_MONOTONIC) */
        TaskQueue *prime_queue;         /* readies io.max's throttling on the disks at start (manager.c) */
        uint64_t stop_began_usec;       /* when the loop ended (CLOCK_MONOTONIC; 0: running), for the stop's debug lines */
        uint64_t pass_began_usec;       /* when it began */
        uint64_t policies_walks;        /* the observer's walks when policies were last attached */
        unsigned config_generation;     /* configurations put in force (a reload that took) */
        unsigned policies_generation;   /* ... when policies were last attached; differs: attach again */
        uint64_t trigger_wakeups;
        size_t n_with_policy;
        size_t history_refused_logged;  /* the last count of governed cgroups without room in the history */
        size_t out_of_fds_logged;       /* the last count of cgroups a tick could not open, as logged */
        RateLimit swap_log;             /* a swap disk congested, or no longer */
        char *status;                   /* last STATUS= sent */
        char *status_key;               /* ... and what it was made of (protection.h's summary) */
        char *capacities_file;          /* the devices' capacities learnt, in the state directory */
        uint64_t capacities_saved_usec;
        uint64_t history_saved_usec;    /* when the history was last written (CLOCK_MONOTONIC) */
        int history_save_error;         /* the last failure to write it, as logged; 0: none */
} Manager;

/* What the runners and the actuator get from the manager. */
static inline PointContext manager_context(Manager *m) {
        return (PointContext) { .observer = m->observer, .config = m->config, .actuator = m->actuator,
                                .queues = m->queues, .events = m->events };
}

/* The loop's CLOCK_MONOTONIC now, in µs. */
static inline uint64_t manager_now_usec(Manager *m) {
        uint64_t t = 0;

        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &t);
        return t;
}
