/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-daemon.h>

#include "cgparse.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

/* MESSAGE_IDs of the daemon's structured events. */
#define MESSAGE_POLICY_ATTACHED "5d0c3f1b7e2a4c8d9b6f0a1e2d3c4b5a"
#define MESSAGE_PRESSURE "a3e4f1c25b6d47e8910f2c3d4e5f6a7b"

void manager_apply_log_level(const ManagerArgs *args, const Config *c) {
        log_set_max_level(args->log_level >= 0 ? args->log_level : c->daemon.log_level);
}

uint64_t manager_now_usec(Manager *m) {
        uint64_t t = 0;

        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &t);
        return t;
}

void manager_event(Manager *m, const LogEvent *ev, const char *format, ...) {
        char message[EVENT_TEXT_MAX];
        const Event *e;
        struct timespec ts;
        va_list ap;

        va_start(ap, format);
        vsnprintf(message, sizeof(message), format, ap);
        va_end(ap);
        log_event(ev, "%s", message);
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        e = event_log_add(&m->events, (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000,
                          ev->level, ev->action, ev->cgroup, ev->unit, message);
        if (m->event_hook)
                m->event_hook(m, e, m->event_hook_userdata);
}

void manager_action_failed(Manager *m, int error, const char *path, const char *action) {
        unsigned suppressed;

        if (!ratelimit_below(&m->action_failures, manager_now_usec(m), &suppressed))
                return;
        if (suppressed)
                log_warning("(%u more failed actions were not logged)", suppressed);
        log_warning_errno(error, "%s: %s failed: %m%s", path ? path : "(gone)", action,
                          error == -EACCES ? " (a subtree delegated to another user is left alone)" : "");
}

static size_t manager_armed_triggers(const Manager *m) {
        size_t n = 0;

        for (size_t i = 0; i < m->n_triggers; i++)
                n += psi_trigger_armed(m->triggers[i]);
        return n;
}

static void manager_notify_status(Manager *m) {
        _cleanup_free_ char *s = NULL;

        if (asprintf(&s, "Watching %zu cgroups, %zu under a policy (%zu policies loaded), %zu PSI triggers",
                     m->observer->cgroups.n, m->n_with_policy, m->config->n_policies,
                     manager_armed_triggers(m)) < 0)
                return;
        if (streq_ptr(s, m->status))
                return;
        (void) sd_notifyf(false, "STATUS=%s", s);
        free(m->status);
        m->status = TAKE_PTR(s);
}

static void manager_attach_policy(Manager *m, CgEntry *e) {
        const Policy *p = config_find_policy(m->config, e->cg->path, e->unit);
        char policy_field[300];
        const char *fields[] = { policy_field, NULL };

        if (p == e->policy)
                return;
        e->policy = p;
        if (!p)
                return;
        snprintf(policy_field, sizeof(policy_field), "POLICY=%s", p->name);
        manager_event(m, &(LogEvent) {
                          .level = LOG_INFO,
                          .message_id = MESSAGE_POLICY_ATTACHED,
                          .cgroup = e->cg->path,
                          .unit = e->unit,
                          .action = "attach-policy",
                          .fields = fields,
                  },
                  "%s: under policy '%s' (mode %s)", e->cg->path, p->name, policy_mode_to_string(p->mode));
}

/* ---- PSI triggers ---- */

static void on_pressure(PsiTrigger *t, bool dead, void *userdata);

static void manager_drop_trigger(Manager *m, size_t i) {
        psi_trigger_free(m->triggers[i]);
        m->triggers[i] = m->triggers[--m->n_triggers];
}

static PsiTrigger *manager_find_trigger(Manager *m, uint64_t id, PsiResource res) {
        for (size_t i = 0; i < m->n_triggers; i++)
                if (m->triggers[i]->cgroup_id == id && m->triggers[i]->resource == res)
                        return m->triggers[i];
        return NULL;
}

/* Makes sure a trigger (id, res) exists; marks it wanted. */
static void manager_want_trigger(Manager *m, int dirfd, const char *what, uint64_t id, PsiResource res,
                                 uint32_t threshold_ppm) {
        const char *file = res == PSI_RESOURCE_MEMORY ? (id ? "memory.pressure" : "pressure/memory")
                                                      : (id ? "io.pressure" : "pressure/io");
        uint64_t window = m->config->daemon.pressure_window_usec;
        PsiTrigger *t = manager_find_trigger(m, id, res), **n;
        bool fell_back;
        int r;

        if (t && t->threshold_usec == psi_threshold_usec(threshold_ppm, t->window_usec)) {
                t->mark = true;
                return;
        }
        if (!t && m->n_triggers >= MANAGER_TRIGGERS_MAX) {
                if (!m->triggers_full_logged)
                        log_warning("More than %d PSI triggers wanted; %s gets none (it is still sampled every tick)",
                                    MANAGER_TRIGGERS_MAX, what);
                m->triggers_full_logged = true;
                return;
        }
        r = psi_trigger_new(m->event, dirfd, file, id, res, threshold_ppm, window, on_pressure, m, &t, &fell_back);
        if (r == -ENOMEM)
                return;
        if (r < 0) {
                log_warning_errno(r, "Cannot arm a PSI trigger on %s's %s (some %" PRIu64 "us per %" PRIu64
                                  "us window): %m%s; it is still sampled every tick", what, file,
                                  psi_threshold_usec(threshold_ppm, window), window,
                                  r == -EINVAL ? " (the kernel refused the threshold or window)" :
                                  r == -EOPNOTSUPP ? " (not a kernel pressure file)" : "");
                /* Remembered, so that the next rescan does not try and warn again. */
                t = psi_trigger_new_failed(id, res, psi_threshold_usec(threshold_ppm, window), window);
                if (!t)
                        return;
        }
        if (r >= 0 && fell_back && !m->window_fallback_logged) {
                log_warning("The kernel refused a %" PRIu64 "ms PSI window: without CAP_SYS_RESOURCE it accepts "
                            "only multiples of 2s. Using %" PRIu64 "ms windows instead.",
                            window / USEC_PER_MSEC, t->window_usec / USEC_PER_MSEC);
                m->window_fallback_logged = true;
        }
        /* Replace an old trigger of the same (id, res) with other settings. */
        for (size_t i = 0; i < m->n_triggers; i++)
                if (m->triggers[i]->cgroup_id == id && m->triggers[i]->resource == res) {
                        manager_drop_trigger(m, i);
                        break;
                }
        n = realloc(m->triggers, (m->n_triggers + 1) * sizeof(PsiTrigger *));
        if (!n) {
                psi_trigger_free(t);
                return;
        }
        m->triggers = n;
        t->mark = true;
        m->triggers[m->n_triggers++] = t;
        if (psi_trigger_armed(t))
                log_debug("PSI trigger armed on %s's %s: some %" PRIu64 "us per %" PRIu64 "us", what, file,
                  t->threshold_usec, t->window_usec);
}

/* Triggers follow policies: memory for PressureTarget=, io for Protect=yes. */
static void manager_reconcile_triggers(Manager *m) {
        const DaemonSettings *d = &m->config->daemon;

        for (size_t i = 0; i < m->n_triggers; i++)
                m->triggers[i]->mark = false;
        manager_want_trigger(m, m->observer->host->proc_fd, "the host", 0, PSI_RESOURCE_MEMORY,
                             d->system_pressure_threshold_ppm);
        manager_want_trigger(m, m->observer->host->proc_fd, "the host", 0, PSI_RESOURCE_IO,
                             d->system_pressure_threshold_ppm);
        for (size_t i = 0; i < m->observer->cgroups.n; i++) {
                CgEntry *e = &m->observer->cgroups.entries[i];
                const Policy *p = e->policy;

                if (!p || p->mode == POLICY_MODE_OFF || e->gone)
                        continue;
                if (p->pressure_target_ppm > 0)
                        manager_want_trigger(m, e->cg->dirfd, e->cg->path, e->cg->id, PSI_RESOURCE_MEMORY,
                                             p->pressure_target_ppm);
                if (p->protect)
                        manager_want_trigger(m, e->cg->dirfd, e->cg->path, e->cg->id, PSI_RESOURCE_IO,
                                             p->io_pressure_limit_ppm ?: d->io_pressure_limit_ppm);
        }
        for (size_t i = m->n_triggers; i > 0; i--)
                if (!m->triggers[i - 1]->mark)
                        manager_drop_trigger(m, i - 1);
}

/* CLOCK_MONOTONIC now, not the loop's cached time of this iteration. */
static uint64_t monotonic_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static void on_pressure(PsiTrigger *t, bool dead, void *userdata) {
        Manager *m = userdata;
        uint64_t now = manager_now_usec(m), began = monotonic_usec();
        CgEntry *e = t->cgroup_id ? cgtable_find(&m->observer->cgroups, t->cgroup_id) : NULL;
        const char *res = psi_resource_to_string(t->resource);
        char f_res[32], f_lat[64], f_fired[64];
        const char *fields[] = { f_res, f_lat, f_fired, NULL };

        if (dead) {
                log_debug("%s: cgroup removed, its %s pressure trigger is closed",
                          e ? e->cg->path : "(gone)", res);
                for (size_t i = 0; i < m->n_triggers; i++)
                        if (m->triggers[i] == t) {
                                manager_drop_trigger(m, i);
                                break;
                        }
                return;
        }
        m->trigger_wakeups++;
        /* Wake up at once: fresh figures for the cgroup (or host) that stalls,
         * and the write point decides now, not at the next tick. */
        if (e)
                (void) observer_sample_entry(m->observer, e, now);
        if (t->resource == PSI_RESOURCE_IO && e && e->policy && e->policy->protect)
                manager_write_point(m, now);
        else if (t->resource == PSI_RESOURCE_MEMORY)
                manager_alloc_point(m, now);
        snprintf(f_res, sizeof(f_res), "RESOURCE=%s", res);
        snprintf(f_lat, sizeof(f_lat), "TRIGGER_THRESHOLD_USEC=%" PRIu64, t->threshold_usec);
        /* When epoll returned for this trigger (sd_event_now), for latency probes. */
        snprintf(f_fired, sizeof(f_fired), "FIRED_MONOTONIC_USEC=%" PRIu64, t->last_fired_usec);
        log_debug("%s: %s trigger #%" PRIu64 " woke the loop at %" PRIu64 "us, handler ran %" PRIu64 "..%" PRIu64
                  "us (CLOCK_MONOTONIC)", e ? e->cg->path : "host", res, t->fired, t->last_fired_usec, began,
                  monotonic_usec());
        manager_event(m, &(LogEvent) {
                          .level = LOG_INFO,
                          .message_id = MESSAGE_PRESSURE,
                          .cgroup = e ? e->cg->path : "/",
                          .unit = e ? e->unit : NULL,
                          .action = "pressure",
                          .fields = fields,
                  },
                  "%s: %s stall over %" PRIu64 "us within %" PRIu64 "ms (trigger #%" PRIu64 ")",
                  e ? e->cg->path : "host", res, t->threshold_usec, t->window_usec / USEC_PER_MSEC, t->fired);
}

/* ---- ticks, rescans, reload ---- */

/* vm.dirty_ratio: what the kernel's per-cgroup dirty limit is a share of. */
static void manager_read_dirty_ratio(Manager *m) {
        char buf[32];
        int fd = -1;
        uint64_t v;

        m->dirty_ratio_pct = 20;
        if (kept_read(m->observer->host->proc_fd, "sys/vm/dirty_ratio", &fd, buf, sizeof(buf), NULL) >= 0 &&
            cg_parse_u64(buf, strlen(buf), &v) >= 0 && v > 0 && v <= 100)
                m->dirty_ratio_pct = (uint32_t) v;
        closep(&fd);
}

int manager_rescan(Manager *m) {
        size_t with_policy = 0;
        int r;

        r = observer_rescan(m->observer);
        if (r < 0)
                return r;
        manager_read_dirty_ratio(m);
        for (size_t i = 0; i < m->observer->cgroups.n; i++) {
                CgEntry *e = &m->observer->cgroups.entries[i];
                manager_attach_policy(m, e);
                with_policy += e->policy != NULL;
        }
        m->n_with_policy = with_policy;
        manager_reconcile_triggers(m);
        manager_notify_status(m);
        return 0;
}

int manager_tick(Manager *m) {
        uint64_t now = manager_now_usec(m);
        int r = observer_sample(m->observer, now);

        if (r < 0)
                return r;
        m->ticks++;
        manager_throttles_verify(m);
        manager_write_point(m, now);
        manager_alloc_point(m, now);
        return 0;
}

static int rearm(sd_event_source *s, uint64_t usec, uint64_t interval) {
        int r = sd_event_source_set_time(s, usec + interval);
        if (r < 0)
                return log_error_errno(r, "Cannot rearm a timer: %m");
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (manager_tick(m) == -ENOMEM) {
                log_error("Out of memory during a tick, stopping");
                return sd_event_exit(m->event, 1);
        }
        return rearm(s, usec, m->config->daemon.interval_usec);
}

static int on_rescan(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (manager_rescan(m) == -ENOMEM) {
                log_error("Out of memory during a rescan, stopping");
                return sd_event_exit(m->event, 1);
        }
        return rearm(s, usec, m->config->daemon.rescan_interval_usec);
}

static void policies_detach_all(Manager *m) {
        for (size_t i = 0; i < m->observer->cgroups.n; i++)
                m->observer->cgroups.entries[i].policy = NULL;
}

int manager_reload(Manager *m) {
        _cleanup_(config_freep) Config *c = NULL;
        ConfDiag diag = {};
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration",
                          manager_now_usec(m));
        r = config_load(m->args.config_root, &c, &diag);
        if (r < 0) {
                for (size_t i = 0; i < diag.n_messages; i++)
                        log_error("%s", diag.messages[i]);
                if (diag.n_dropped)
                        log_error("... and %zu more errors", diag.n_dropped);
                log_error_errno(r, "New configuration refused (%zu errors); the running one stays in force",
                                conf_diag_count(&diag));
        } else {
                if (!streq_ptr(c->daemon.cgroup_root, m->config->daemon.cgroup_root))
                        log_warning("CgroupRoot= changed; it takes effect at the next restart");
                /* Policies point into the old configuration: detach before freeing it. */
                policies_detach_all(m);
                /* Triggers that failed are tried again with the new settings. */
                for (size_t i = m->n_triggers; i > 0; i--)
                        if (!psi_trigger_armed(m->triggers[i - 1]))
                                manager_drop_trigger(m, i - 1);
                config_free(m->config);
                m->config = TAKE_PTR(c);
                manager_apply_log_level(&m->args, m->config);
                log_info("Configuration reloaded: %zu files, %zu policies",
                         m->config->n_files, m->config->n_policies);
                r = 0;
        }
        conf_diag_clear(&diag);
        free(m->status);
        m->status = NULL;
        (void) manager_rescan(m);
        (void) sd_notify(false, "READY=1");
        return r;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (si->ssi_signo == SIGHUP) {
                (void) manager_reload(m);
                return 0;
        }
        log_info("Received SIG%s, stopping", si->ssi_signo == SIGTERM ? "TERM" : "INT");
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
        return sd_event_exit(m->event, 0);
}

/* The daemon's own cgroup ("0::/path" in /proc/self/cgroup): never reclaimed. */
static void manager_read_own_cgroup(Manager *m) {
        char buf[512], *p;
        int fd = -1;

        if (kept_read(m->observer->host->proc_fd, "self/cgroup", &fd, buf, sizeof(buf), NULL) >= 0 &&
            (p = strstr(buf, "0::")))
                m->own_cgroup = strndup(p + 3, strcspn(p + 3, "\n"));
        closep(&fd);
}

static int add_timer(Manager *m, sd_event_source **s, uint64_t usec, sd_event_time_handler_t cb, const char *name) {
        int r = sd_event_add_time_relative(m->event, s, CLOCK_MONOTONIC, usec, 0, cb, m);

        if (r < 0)
                return log_error_errno(r, "Cannot create the %s timer: %m", name);
        (void) sd_event_source_set_description(*s, name);
        return 0;
}

int manager_new(const ManagerArgs *args, Config *config, const char *cgroup_root, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
        int r;

        if (!m) {
                config_free(config);
                return -ENOMEM;
        }
        m->args = *args;
        m->config = config;
        m->dirty_ratio_pct = 20;
        m->swappiness_arg = -1;
        m->action_failures = (RateLimit) RATELIMIT_INIT(60 * USEC_PER_SEC, 10);
        event_log_init(&m->events);
        r = observer_new(cgroup_root, args->proc_root ?: "/proc", args->sys_root ?: "/sys", &m->observer);
        if (r < 0)
                return r;
        r = sd_event_new(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        {
                _cleanup_free_ char *ledger_file = NULL;
                if (asprintf(&ledger_file, "%s/throttles", args->state_dir ?: "/run/mdreclaim") < 0)
                        return -ENOMEM;
                ledger_init(&m->ledger, ledger_file);
        }
        r = worker_new(m->event, manager_job_done, m, &m->worker);
        if (r < 0)
                return log_error_errno(r, "Cannot start the worker thread: %m");
        worker_set_proc_root(m->worker, args->proc_root ?: "/proc");
        manager_read_own_cgroup(m);
        for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                r = sd_event_add_signal(m->event, &m->signal_sources[i], signals[i] | SD_EVENT_SIGNAL_PROCMASK,
                                        on_signal, m);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch signal %d: %m", signals[i]);
        }
        r = add_timer(m, &m->tick_source, m->config->daemon.interval_usec, on_tick, "tick");
        if (r < 0)
                return r;
        r = add_timer(m, &m->rescan_source, m->config->daemon.rescan_interval_usec, on_rescan, "rescan");
        if (r < 0)
                return r;
        /* Sends WATCHDOG=1 at half of WatchdogSec= when the service manager asks. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Cannot enable the watchdog: %m");
        *ret = TAKE_PTR(m);
        return 0;
}

int manager_run(Manager *m) {
        int r;

        r = manager_rescan(m);
        if (r < 0)
                return log_error_errno(r, "First scan of %s failed: %m", m->observer->root->path);
        /* Throttles a previous run left behind are restored before anything is decided. */
        (void) manager_throttles_recover(m);
        r = manager_tick(m);
        if (r < 0)
                return log_error_errno(r, "First sample of %s failed: %m", m->observer->root->path);
        log_info("Watching %zu cgroups under %s, %zu policies, %zu PSI triggers, tick every %" PRIu64 "ms",
                 m->observer->cgroups.n, m->observer->root->path, m->config->n_policies,
                 manager_armed_triggers(m),
                 m->config->daemon.interval_usec / USEC_PER_MSEC);
        (void) sd_notify(false, "READY=1");
        r = sd_event_loop(m->event);
        manager_throttles_restore_all(m);
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_triggers; i++)
                psi_trigger_free(m->triggers[i]);
        free(m->triggers);
        worker_free(m->worker);
        ledger_clear(&m->ledger);
        sd_event_source_disable_unref(m->tick_source);
        sd_event_source_disable_unref(m->rescan_source);
        for (size_t i = 0; i < ELEMENTSOF(m->signal_sources); i++)
                sd_event_source_disable_unref(m->signal_sources[i]);
        sd_event_unref(m->event);
        observer_free(m->observer);
        config_free(m->config);
        free(m->status);
        free(m->own_cgroup);
        free(m);
        return NULL;
}
