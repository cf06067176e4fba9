/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager.h"

#include <errno.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "util.h"

/* MESSAGE_ID of the event logged when a cgroup comes under a policy. */
#define MESSAGE_POLICY_ATTACHED "5d0c3f1b7e2a4c8d9b6f0a1e2d3c4b5a"

void manager_apply_log_level(const ManagerArgs *args, const Config *c) {
        log_set_max_level(args->log_level >= 0 ? args->log_level : c->daemon.log_level);
}

static void manager_notify_status(Manager *m) {
        _cleanup_free_ char *s = NULL;

        if (asprintf(&s, "Watching %zu cgroups, %zu under a policy (%zu policies loaded)",
                     m->cgroups.n, m->n_with_policy, m->config->n_policies) < 0)
                return;
        if (streq_ptr(s, m->status))
                return;
        (void) sd_notifyf(false, "STATUS=%s", s);
        free(m->status);
        m->status = TAKE_PTR(s);
}

static void manager_attach_policy(Manager *m, CgEntry *e) {
        const char *unit = cgroup_path_unit(e->cg->path);
        const Policy *p = config_find_policy(m->config, e->cg->path, unit);
        char policy_field[300];
        const char *fields[] = { policy_field, NULL };

        if (p == e->policy)
                return;
        e->policy = p;
        if (!p)
                return;
        snprintf(policy_field, sizeof(policy_field), "POLICY=%s", p->name);
        log_event(&(LogEvent) {
                          .level = LOG_INFO,
                          .message_id = MESSAGE_POLICY_ATTACHED,
                          .cgroup = e->cg->path,
                          .unit = unit,
                          .action = "attach-policy",
                          .fields = fields,
                  },
                  "%s: under policy '%s' (mode %s)", e->cg->path, p->name, policy_mode_to_string(p->mode));
}

int manager_tick(Manager *m) {
        size_t with_policy = 0;
        int r;

        r = cgtable_refresh(&m->cgroups, m->root);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_warning_errno(r, "Scanning cgroups under %s failed, keeping the last view: %m",
                                  m->root->path);
        for (size_t i = 0; i < m->cgroups.n; i++) {
                CgEntry *e = &m->cgroups.entries[i];

                manager_attach_policy(m, e);
                with_policy += e->policy != NULL;
                r = sampler_read_cgroup(e->cg, &e->sample);
                if (r == -ENOMEM)
                        return r;
                e->sampled = r >= 0;
                /* A cgroup removed since the scan is dropped by the next one. */
        }
        m->n_with_policy = with_policy;
        m->ticks++;
        manager_notify_status(m);
        return 0;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int r;

        r = manager_tick(m);
        if (r == -ENOMEM) {
                log_error("Out of memory during a tick, stopping");
                return sd_event_exit(m->event, 1);
        }
        r = sd_event_source_set_time(s, usec + m->config->daemon.interval_usec);
        if (r < 0)
                return log_error_errno(r, "Cannot rearm the tick timer: %m");
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static void policies_detach_all(Manager *m) {
        for (size_t i = 0; i < m->cgroups.n; i++)
                m->cgroups.entries[i].policy = NULL;
}

int manager_reload(Manager *m) {
        _cleanup_(config_freep) Config *c = NULL;
        ConfDiag diag = {};
        uint64_t now;
        int r;

        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=Reloading configuration",
                          (unsigned long long) now);
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
                config_free(m->config);
                m->config = TAKE_PTR(c);
                manager_apply_log_level(&m->args, m->config);
                /* Policies are reattached by the next tick (pointers went stale). */
                policies_detach_all(m);
                log_info("Configuration reloaded: %zu files, %zu policies",
                         m->config->n_files, m->config->n_policies);
                r = 0;
        }
        conf_diag_clear(&diag);
        free(m->status);
        m->status = NULL;
        (void) manager_tick(m);
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
        r = cg_root_open(cgroup_root, &m->root);
        if (r < 0)
                return log_error_errno(r, "Cannot open the cgroup root %s: %m", cgroup_root);
        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
                r = sd_event_add_signal(m->event, &m->signal_sources[i], signals[i] | SD_EVENT_SIGNAL_PROCMASK,
                                        on_signal, m);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch signal %d: %m", signals[i]);
        }
        r = sd_event_add_time_relative(m->event, &m->tick_source, CLOCK_MONOTONIC,
                                       m->config->daemon.interval_usec, 0, on_tick, m);
        if (r < 0)
                return log_error_errno(r, "Cannot create the tick timer: %m");
        (void) sd_event_source_set_description(m->tick_source, "tick");
        /* Sends WATCHDOG=1 at half of WatchdogSec= when the service manager asks. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Cannot enable the watchdog: %m");
        *ret = TAKE_PTR(m);
        return 0;
}

int manager_run(Manager *m) {
        int r;

        r = manager_tick(m);
        if (r < 0)
                return log_error_errno(r, "First scan of %s failed: %m", m->root->path);
        log_info("Watching %zu cgroups under %s, %zu policies, tick every %llu ms",
                 m->cgroups.n, m->root->path, m->config->n_policies,
                 (unsigned long long) (m->config->daemon.interval_usec / USEC_PER_MSEC));
        (void) sd_notify(false, "READY=1");
        return sd_event_loop(m->event);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->tick_source);
        for (size_t i = 0; i < ELEMENTSOF(m->signal_sources); i++)
                sd_event_source_disable_unref(m->signal_sources[i]);
        sd_event_unref(m->event);
        cgtable_clear(&m->cgroups);
        cg_root_free(m->root);
        config_free(m->config);
        free(m->status);
        free(m);
        return NULL;
}
