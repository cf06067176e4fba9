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
#include "ledger.h"
#include "worker.h"
#include "alloc-point.h"
#include "write-point.h"
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
        const char *state_dir;          /* the throttle ledger's directory; "/run/mdreclaim" */
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

        /* Acting: the shared throttle ledger, the worker for blocking writes. */
        Ledger ledger;
        Worker *worker;
        struct PendingJob {
                uint64_t cookie;
                JobKind kind;
                uint64_t cgroup_id;
                ThrottleKind throttle;          /* JOB_WRITE of a throttle */
                uint32_t major, minor;
                uint64_t value;
        } pending[WORKER_QUEUE_MAX];
        size_t n_pending;
        uint64_t next_cookie;
        bool io_missing_logged;

        /* Deciding: the points' own state. */
        WritePointState write_point;
        AllocPointState alloc_point;
        char *own_cgroup;               /* the daemon's cgroup, never reclaimed */
        int swappiness_arg;             /* memory.reclaim takes "swappiness=": -1 unknown, 0 no, 1 yes */
        bool swap_note_logged;
        uint32_t dirty_ratio_pct;       /* vm.dirty_ratio, read at rescans */

        RateLimit action_failures;      /* warnings about failed actions */

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

/* manager-write.c: the write point each tick, and the throttles it shares. */
void manager_write_point(Manager *m, uint64_t now_usec);
int manager_throttles_recover(Manager *m);
void manager_throttles_verify(Manager *m);
void manager_throttles_restore_all(Manager *m);
void manager_job_done(const Job *job, void *userdata);
/* An operator's writeback request (or the write point's). */
int manager_writeback(Manager *m, CgEntry *e, const char *reason);

/* Shared by both points: one ledger, the lower memory.high wins. */
int manager_throttle_request(Manager *m, CgEntry *e, ThrottleKind kind, uint32_t major, uint32_t minor,
                             ThrottlePoint point, uint64_t value, const char *reason);
int manager_throttle_withdraw(Manager *m, CgEntry *e, uint64_t cgroup_id, ThrottleKind kind, uint32_t major,
                              uint32_t minor, ThrottlePoint point, const char *reason);
int manager_submit_job(Manager *m, CgEntry *e, Job *job, JobKind kind, ThrottleKind throttle, uint32_t major,
                       uint32_t minor, uint64_t value);

/* manager-alloc.c: the allocation point each tick, and one-shot reclaim. */
void manager_alloc_point(Manager *m, uint64_t now_usec);
/* Reclaims `bytes` (UINT64_MAX: all reclaimable) of the cgroup, cache only if asked. */
int manager_reclaim(Manager *m, CgEntry *e, uint64_t bytes, bool cache_only, const char *reason);
void manager_reclaim_done(Manager *m, const Job *job, uint64_t cgroup_id);

/* A point's action failed (EACCES in a delegated subtree, a write the kernel
 * refused): warned about, at most ten times a minute. */
void manager_action_failed(Manager *m, int error, const char *path, const char *action);

/* The loop's CLOCK_MONOTONIC now, in µs. */
uint64_t manager_now_usec(Manager *m);

/* Applies the log level: --log-level wins over LogLevel=. */
void manager_apply_log_level(const ManagerArgs *args, const Config *c);
