/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The running daemon: one sd-event loop carrying the signals, the tick that
 * samples every cgroup, the rescan that finds new and removed ones, the PSI
 * triggers that wake it at once, and the service manager notifications. It
 * owns the configuration and swaps it whole on reload.
 */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#include "conf.h"
#include "event-log.h"
#include "log.h"
#include "observer.h"
#include "psi-trigger.h"

/* Bound on PSI triggers (each costs the kernel a poller); more are refused. */
#define MANAGER_TRIGGERS_MAX 1024

typedef struct ManagerArgs {
        const char *config_root;        /* NULL: the real directories */
        const char *cgroup_root;        /* NULL: from the config or discovery */
        const char *proc_root;          /* "/proc" outside tests */
        const char *sys_root;           /* "/sys" outside tests */
        int log_level;                  /* -1: from the config */
} ManagerArgs;

typedef struct Manager Manager;

/* Called for every event the manager records (the bus turns it into a signal). */
typedef void (*ManagerEventHook)(Manager *m, const Event *e, void *userdata);

struct Manager {
        sd_event *event;
        sd_event_source *tick_source;
        sd_event_source *rescan_source;
        sd_event_source *signal_sources[3];

        ManagerArgs args;
        Config *config;
        Observer *observer;

        PsiTrigger **triggers;
        size_t n_triggers;
        bool triggers_full_logged;
        bool window_fallback_logged;

        EventLog events;
        ManagerEventHook event_hook;
        void *event_hook_userdata;

        uint64_t ticks;
        uint64_t trigger_wakeups;
        size_t n_with_policy;
        char *status;           /* last STATUS= sent */
};

/* Takes ownership of `config`. */
int manager_new(const ManagerArgs *args, Config *config, const char *cgroup_root, Manager **ret);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        if (*m)
                manager_free(*m);
}

/* Runs until SIGTERM/SIGINT; returns 0 on a clean stop. */
int manager_run(Manager *m);

/* Reads the configuration again; a bad one is refused and the old kept. */
int manager_reload(Manager *m);

/* The rescan's work: find cgroups, attach policies, reconcile triggers. */
int manager_rescan(Manager *m);

/* The tick's work: sample everything. */
int manager_tick(Manager *m);

/* Records a structured event: journal (or stderr), the event ring, the hook. */
void manager_event(Manager *m, const LogEvent *ev, const char *format, ...) __attribute__((format(printf, 3, 4)));

/* Applies the log level: --log-level wins over LogLevel=. */
void manager_apply_log_level(const ManagerArgs *args, const Config *c);
