/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "blkthrottle.h"
#include "conf-file.h"
#include "history-record.h"
#include "manager-cgroups.h"
#include "hostfs.h"
#include "log.h"
#include "message-ids.h"
#include "observer-scan.h"
#include "protection.h"
#include "taskq.h"
#include "util.h"

/* Device capacities learnt are saved at most this often (and at a stop). */
#define CAPACITIES_SAVE_USEC (60 * USEC_PER_SEC)

void manager_apply_log_level(const ManagerArgs *args, const Config *c) {
        log_set_max_level(args->log_level >= 0 ? args->log_level : c->daemon.log_level);
}

const char *manager_state_dir(const Manager *m) {
        return m->args.state_dir ?: "/run/mdreclaim";
}

const char *manager_persistent_dir(const Manager *m) {
        return m->args.persistent_dir ?: manager_state_dir(m);
}

/* The summary as numbers, device numbers for names: when it is what STATUS= was last made of, nothing
 * is read or sent. */
static char *status_key(const Manager *m, const ProtectionSummary *p) {
        char *key = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&key, &size);

        if (!f)
                return NULL;
        fprintf(f, "%zu %zu %zu %zu %zu %zu %zu %zu", m->observer->cgroups.n, m->n_with_policy,
                m->config->n_policies, trigger_set_armed(&m->triggers), p->n_protected, p->n_capped,
                p->n_throttles, p->n_devices);
        for (size_t i = 0; i < MIN(p->n_protected, (size_t) PROTECTION_NAMES_MAX); i++)
                fprintf(f, "|%s", p->protected[i]);
        for (size_t i = 0; i < MIN(p->n_capped, (size_t) PROTECTION_NAMES_MAX); i++)
                fprintf(f, "|%s", p->capped[i]);
        for (size_t i = 0; i < p->n_devices; i++)
                fprintf(f, "|%" PRIu32 ":%" PRIu32, p->devices[i].major, p->devices[i].minor);
        if (fclose(f) != 0) {
                free(key);
                return NULL;
        }
        return key;
}

/* STATUS=: what is watched, what is protected and who is capped for it, sent when it changes. */
static void manager_notify_status(Manager *m) {
        _cleanup_free_ char *s = NULL, *key = NULL, *line = NULL;
        ProtectionSummary p;

        protection_summary(m, &p);
        key = status_key(m, &p);
        if (!key || (m->status && streq_ptr(key, m->status_key)))
                return;
        line = protection_line(m, &p);
        if (!line || asprintf(&s, "Watching %zu cgroups, %zu under a policy (%zu policies loaded), %zu PSI "
                              "triggers; %s", m->observer->cgroups.n, m->n_with_policy, m->config->n_policies,
                              trigger_set_armed(&m->triggers), line) < 0)
                return;
        free(m->status_key);
        m->status_key = TAKE_PTR(key);
        if (streq_ptr(s, m->status))
                return;
        (void) sd_notifyf(false, "STATUS=%s", s);
        free(m->status);
        m->status = TAKE_PTR(s);
}

/* ---- PSI wake-ups ---- */

static void pressure_event(Manager *m, const PsiTrigger *t, const CgEntry *e) {
        const char *res = psi_resource_to_string(t->resource);
        char f_res[32], f_lat[64], f_window[64], f_count[64], f_fired[64];
        const char *fields[] = { f_res, f_lat, f_window, f_count, f_fired, NULL };

        snprintf(f_res, sizeof(f_res), "RESOURCE=%s", res);
        snprintf(f_lat, sizeof(f_lat), "TRIGGER_THRESHOLD_USEC=%" PRIu64, t->threshold_usec);
        snprintf(f_window, sizeof(f_window), "TRIGGER_WINDOW_USEC=%" PRIu64, t->window_usec);
        snprintf(f_count, sizeof(f_count), "TRIGGER_COUNT=%" PRIu64, t->fired);
        /* When epoll returned for this trigger (sd_event_now), for latency probes. */
        snprintf(f_fired, sizeof(f_fired), "FIRED_MONOTONIC_USEC=%" PRIu64, t->last_fired_usec);
        event_record(m->events, &(LogEvent) { .level = LOG_INFO, .message_id = MESSAGE_PRESSURE,
                                              .cgroup = e ? e->cg->path : "/", .unit = e ? e->unit : NULL,
                                              .action = "pressure", .fields = fields },
                     "%s: %s stall over %" PRIu64 "us within %" PRIu64 "ms (trigger #%" PRIu64 ")",
                     e ? e->cg->path : "host", res, t->threshold_usec, t->window_usec / USEC_PER_MSEC, t->fired);
}

static void on_pressure(PsiTrigger *t, bool dead, void *userdata) {
        Manager *m = userdata;
        uint64_t now = manager_now_usec(m), began = now_usec(CLOCK_MONOTONIC);
        CgEntry *e = t->cgroup_id ? cgtable_find(&m->observer->cgroups, t->cgroup_id) : NULL;
        PointContext ctx = manager_context(m);

        if (dead) {
                log_debug("%s: cgroup removed, its %s pressure trigger is closed", e ? e->cg->path : "(gone)",
                          psi_resource_to_string(t->resource));
                trigger_set_remove(&m->triggers, t);
                return;
        }
        m->trigger_wakeups++;
        /* Wake up at once: fresh figures for the cgroup (or host) that stalls,
         * and the point decides now, not at the next tick. */
        if (e)
                (void) observer_sample_entry(m->observer, e, now);
        else if (!t->cgroup_id)
                observer_sample_host(m->observer, now);
        if (t->resource == PSI_RESOURCE_IO && (!t->cgroup_id || (e && e->policy && e->policy->protect)))
                write_runner_run(&m->write_runner, &ctx, now);
        else if (t->resource == PSI_RESOURCE_MEMORY)
                alloc_runner_run(&m->alloc_runner, &ctx, now);
        log_debug("%s: %s trigger #%" PRIu64 " woke the loop at %" PRIu64 "us, handler ran %" PRIu64 "..%" PRIu64
                  "us (CLOCK_MONOTONIC)", e ? e->cg->path : "host", psi_resource_to_string(t->resource), t->fired,
                  t->last_fired_usec, began, now_usec(CLOCK_MONOTONIC));
        pressure_event(m, t, e);
}

/* ---- the actuator's callbacks ---- */

static int lookup_cgroup(uint64_t cgroup_id, Cgroup **ret_cg, const char **ret_unit, void *userdata) {
        Manager *m = userdata;
        CgEntry *e = cgtable_find(&m->observer->cgroups, cgroup_id);
        int r;

        if (!e)
                return -ENODEV;
        /* A cgroup sampled now and then holds no fd: it is opened for the action. */
        r = observer_attach(m->observer, e);
        if (r < 0)
                return r;
        *ret_cg = e->cg;
        *ret_unit = e->unit;
        return 0;
}

static void on_job_done(const Job *job, uint64_t cgroup_id, void *userdata) {
        Manager *m = userdata;
        PointContext ctx = manager_context(m);

        write_runner_job_done(&m->write_runner, job, cgroup_id);
        /* A reclaim asked again (without swappiness=) goes on under the same action. */
        if (alloc_runner_job_done(&m->alloc_runner, &ctx, job, cgroup_id, manager_now_usec(m)) == 0 && job->action_id)
                manager_action_job_done(m, job);
}

static void on_throttle_dropped(const ThrottleEntry *t, void *userdata) {
        Manager *m = userdata;

        write_runner_throttle_dropped(&m->write_runner, t);
        alloc_runner_throttle_dropped(&m->alloc_runner, t);
}

static void on_throttles_changed(void *userdata) {
        Manager *m = userdata;

        if (m->throttles_hook)
                m->throttles_hook(m->throttles_hook_userdata);
}

static const ActuatorOps actuator_ops = {
        .lookup = lookup_cgroup,
        .job_done = on_job_done,
        .throttle_dropped = on_throttle_dropped,
        .throttles_changed = on_throttles_changed,
};

/* ---- throttles follow the policies ---- */

static const char *why_not_enforced(const Policy *p) {
        if (!p)
                return "no policy matches the cgroup any more";
        return p->mode == POLICY_MODE_OFF ? "its policy is off now" : "its policy only observes now";
}

/* Every point's request on one throttle (but the write point's, `keep_write`) is withdrawn, and the
 * point forgets it. */
static void lift_points(Manager *m, const ThrottleEntry *held, bool keep_write, const char *why) {
        ThrottleEntry t = *held;        /* the ledger's entry may go with the first lift */

        for (int p = 0; p < _POINT_MAX; p++) {
                ThrottleRequest q = { .kind = t.kind, .major = t.major, .minor = t.minor, .point = (ThrottlePoint) p,
                                      .reason = why };

                if (t.requested[p] == THROTTLE_NONE || (keep_write && p == POINT_WRITE))
                        continue;
                /* Told even if the write failed: the request is withdrawn from the ledger either way,
                 * and the actuator writes the original back at a later check. */
                (void) actuator_throttle_lift(m->actuator, t.cgroup_id, &q);
                if (p == POINT_WRITE)
                        write_runner_throttle_dropped(&m->write_runner, &t);
                else
                        alloc_runner_throttle_dropped(&m->alloc_runner, &t);
        }
}

/* A throttle on a cgroup whose policy no longer enforces (observe, off, gone) is lifted at once; the
 * write point's on a cgroup under no policy stays while CapWritersWithoutPolicy= lets it cap one (the
 * point lifts it itself once the protected cgroup no longer needs it). */
static void manager_throttles_follow_policies(Manager *m) {
        const Ledger *l = actuator_ledger(m->actuator);
        bool unmanaged = m->config->daemon.cap_writers_without_policy;

        /* Backwards: a lift may remove the entry, moving the last one (already seen) into its place. */
        for (size_t i = l->n; i > 0; i--) {
                const ThrottleEntry *t = &l->entries[i - 1];
                const CgEntry *e = cgtable_find(&m->observer->cgroups, t->cgroup_id);
                bool keep_write;

                /* A swap hold lasts its cache-only reclaim, which an operator may ask of any cgroup:
                 * the reclaim's end lifts it, whatever the policy says meanwhile. */
                if (!e || e->gone || (e->policy && e->policy->mode == POLICY_MODE_ENFORCE) ||
                    t->kind == THROTTLE_SWAP_MAX)
                        continue;
                keep_write = !e->policy && unmanaged;
                if (keep_write && t->requested[POINT_ALLOCATION] == THROTTLE_NONE)
                        continue;
                lift_points(m, t, keep_write, why_not_enforced(e->policy));
        }
}

/* ---- ticks, rescans, reload ---- */

/* Tells the worker whether a swap disk is congested, and the log when that changes. */
static void swap_watch(Manager *m) {
        const DevStat *d = observer_swap_congested(m->observer);

        if ((d != NULL) == worker_swap_congested())
                return;
        worker_set_swap_congested(d != NULL);
        /* A disk on the edge turns this over from tick to tick: said a few times a minute at most. */
        if (!ratelimit_below(&m->swap_log, now_usec(CLOCK_MONOTONIC), NULL))
                return;
        if (d)
                log_info("Swap disk %" PRIu32 ":%" PRIu32 " congested (busy %" PRIu32 "%%, writes wait %" PRIu64
                         " ms): reclaims that may swap go cache only", d->major, d->minor, d->busy_ppm / 10000,
                         d->write_wait_usec / USEC_PER_MSEC);
        else
                log_info("No swap disk congested: reclaims may swap again");
}

bool manager_walk_for_lookup(Manager *m) {
        /* No walk, whoever asks: the events queued since the loop last read them (a cgroup made a moment
         * ago) are taken now. */
        int r = observer_take_events(m->observer, manager_now_usec(m));
        size_t rechecked = observer_recheck_gone(m->observer);

        if (r <= 0 && rechecked == 0)
                return false;
        manager_adopt_news(m, true);
        return true;
}

int manager_rescan(Manager *m) {
        int r;

        r = observer_rescan(m->observer);
        if (r < 0)
                return r;
        m->write_runner.dirty_ratio_pct = host_read_dirty_ratio(m->observer->host);
        m->observer->cold_every = (unsigned) MAX(m->config->daemon.cold_interval_usec / m->config->daemon.interval_usec,
                                                 UINT64_C(1));
        m->observer->cold_interval_usec = m->config->daemon.cold_interval_usec;
        m->observer->cold_budget_ppm = m->config->daemon.cold_budget_ppm;
        m->observer->tick_usec = m->config->daemon.interval_usec;
        /* The cgroups and the policies change only with a walk, an event or a reload: not every rescan
         * matches every cgroup against every policy again. */
        if (m->policies_walks != m->observer->walks || m->policies_generation != m->config_generation)
                manager_attach_policies(m);
        else
                manager_adopt_news(m, false);
        manager_throttles_follow_policies(m);
        trigger_set_reconcile(&m->triggers, m->observer, m->config);
        manager_notify_status(m);
        return 0;
}

/* ---- the sample history ---- */

static void manager_record_history(Manager *m) {
        int r;

        if (!m->history)
                return;
        r = history_record(m->history, m->observer, actuator_ledger(m->actuator), now_usec(CLOCK_REALTIME));
        if (r < 0)
                return;
        if (r > 0 && (size_t) r != m->history_refused_logged)
                log_warning("%d cgroups under a policy have no sample history: [History] Cgroups=%zu are kept",
                            r, m->history->max_cgroups);
        m->history_refused_logged = (size_t) r;
}

static void manager_load_history(Manager *m) {
        const char *dir = manager_persistent_dir(m);
        int r;

        if (m->config->daemon.history_samples == 0) {
                /* Off: what an earlier run kept is not left behind to look current. */
                r = history_remove_file(dir);
                if (r < 0)
                        log_warning_errno(r, "Cannot remove %s/%s: %m", dir, HISTORY_FILE_NAME);
                else if (r > 0)
                        log_info("[History] Samples=0: the sample history %s/%s is removed", dir, HISTORY_FILE_NAME);
                return;
        }
        r = history_new_for_tick(m->config->daemon.history_samples, m->config->daemon.history_cgroups,
                                 m->config->daemon.interval_usec, &m->history);
        if (r < 0) {
                log_error_errno(r, "Cannot keep a sample history: %m");
                return;
        }
        m->history_saved_usec = manager_now_usec(m);
        r = history_read_file(m->history, dir);
        if (r == -EPROTONOSUPPORT)
                log_warning("%s/%s was written by another version of the daemon; the history starts afresh", dir,
                            HISTORY_FILE_NAME);
        else if (r == -EBADMSG)
                log_warning("%s/%s is not a whole sample history (damaged, cut short, or larger than [History] "
                            "allows); ignored, the history starts afresh", dir, HISTORY_FILE_NAME);
        else if (r < 0)
                log_warning_errno(r, "Cannot read %s/%s: %m; the history starts afresh", dir, HISTORY_FILE_NAME);
        else if (history_track_count(&m->history->host) > 0)
                log_info("Sample history read from %s/%s: %zu samples of the host, %zu cgroups", dir,
                         HISTORY_FILE_NAME, history_track_count(&m->history->host), m->history->n_tracks);
}

/* Writes the history to the state directory; a failure is logged once until it changes or clears. */
static void manager_save_history(Manager *m, uint64_t now) {
        int r;

        if (!m->history)
                return;
        r = history_write_file(m->history, manager_persistent_dir(m));
        m->history_saved_usec = now;
        if (r < 0 && r != m->history_save_error)
                log_warning_errno(r, "Cannot write the sample history to %s/%s: %m", manager_persistent_dir(m),
                                  HISTORY_FILE_NAME);
        else if (r >= 0 && m->history_save_error < 0)
                log_info("The sample history is written to %s/%s again", manager_persistent_dir(m),
                         HISTORY_FILE_NAME);
        m->history_save_error = MIN(r, 0);
}

/* What follows a whole pass: throttles verified, both points run, the history recorded. */
static void manager_tick_finish(Manager *m) {
        uint64_t now = manager_now_usec(m);
        PointContext ctx = manager_context(m);
        int r;

        r = sd_event_source_set_enabled(m->slice_source, SD_EVENT_OFF);
        if (r < 0)
                log_debug_errno(r, "Cannot stop the tick's slices: %m");
        m->ticks++;
        if (m->observer->out_of_fds > 0 && m->observer->out_of_fds != m->out_of_fds_logged)
                log_warning("Out of file descriptors: %zu cgroups could not be sampled this tick; "
                            "raise LimitNOFILE= of the service", m->observer->out_of_fds);
        m->out_of_fds_logged = m->observer->out_of_fds;
        if (m->observer->devices.known_changed && now - m->capacities_saved_usec >= CAPACITIES_SAVE_USEC) {
                (void) devstat_save(&m->observer->devices, m->capacities_file);
                m->capacities_saved_usec = now;
        }
        actuator_verify(m->actuator);
        queue_depth_verify(m->queues);
        swap_watch(m);
        write_runner_run(&m->write_runner, &ctx, now);
        dirty_watch_set(&m->dirty_watch, m->write_runner.guarding && m->config->daemon.guard_rate_ppm > 0);
        if (m->write_runner.want_rescan) {
                /* A writer nobody in view accounts for: its cgroup may be new, and it is sampled with
                 * the others at the next two passes. */
                m->write_runner.want_rescan = false;
                if (manager_rescan(m) >= 0)
                        observer_warm_all(m->observer);
        }
        alloc_runner_run(&m->alloc_runner, &ctx, now);
        manager_record_history(m);
        /* Written now and then too, so that a crash loses at most SaveInterval= of it. */
        if (m->config->daemon.history_save_interval_usec > 0 &&
            now - m->history_saved_usec >= m->config->daemon.history_save_interval_usec)
                manager_save_history(m, now);
}

int manager_tick(Manager *m) {
        int r = observer_pass_step(m->observer, manager_now_usec(m), SIZE_MAX, UINT64_MAX);

        if (r < 0)
                return r;
        manager_tick_finish(m);
        return 0;
}

/* How long the loop was kept by the slices of a tick, for the benchmarks (debug). */
static void manager_time_slice(Manager *m, uint64_t began, bool last) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        if (m->observer->pass_steps <= 1) {
                m->pass_began_usec = began;
                m->slice_longest_usec = 0;
        }
        m->slice_longest_usec = MAX(m->slice_longest_usec, now - began);
        if (last)
                log_debug("Tick %" PRIu64 ": %u slices, the longest %" PRIu64 "us (the last one runs the points "
                          "too), %" PRIu64 "us from the first to the end", m->ticks, m->observer->pass_steps,
                          m->slice_longest_usec, now - m->pass_began_usec);
}

int manager_tick_slice(Manager *m) {
        uint64_t began = now_usec(CLOCK_MONOTONIC);
        int r = observer_pass_step(m->observer, manager_now_usec(m), MANAGER_SLICE_CGROUPS, MANAGER_SLICE_USEC);

        if (r < 0)
                return r;
        if (r > 0) {
                manager_tick_finish(m);
                manager_time_slice(m, began, true);
                return 0;
        }
        manager_time_slice(m, began, false);
        /* The rest from the slice source; should it fail to start, the next tick goes on with the pass. */
        r = sd_event_source_set_enabled(m->slice_source, SD_EVENT_ON);
        if (r < 0)
                log_warning_errno(r, "Cannot schedule the rest of a tick: %m");
        return 0;
}

/* The host's dirty data rose by a writer's burst since the last tick: the next one comes now. */
static void on_dirty_rise(void *userdata) {
        Manager *m = userdata;

        log_debug("The host's dirty data rose by %" PRIu64 " MiB or more since the last tick: a tick now",
                  DIRTY_WATCH_RISE >> 20);
        manager_request_tick(m);
}

static int rearm(sd_event_source *s, uint64_t usec, uint64_t interval) {
        int r = sd_event_source_set_time(s, usec + interval);
        if (r < 0)
                return log_error_errno(r, "Cannot rearm a timer: %m");
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->tick_fired_usec = usec;
        /* A pass still open when the next tick is due goes on: a slow pass makes ticks late, not piled up. */
        if (manager_tick_slice(m) == -ENOMEM) {
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

static int on_slice(sd_event_source *s, void *userdata) {
        Manager *m = userdata;

        if (manager_tick_slice(m) == -ENOMEM) {
                log_error("Out of memory during a tick, stopping");
                return sd_event_exit(m->event, 1);
        }
        return 0;
}

static void log_refused(const ConfDiag *diag, int r) {
        for (size_t i = 0; i < diag->n_messages; i++)
                log_error("%s", diag->messages[i]);
        if (diag->n_dropped)
                log_error("... and %zu more errors", diag->n_dropped);
        log_error_errno(r, "New configuration refused (%zu errors); the running one stays in force",
                        conf_diag_count(diag));
}

/* Puts a new, valid configuration in force. */
static void swap_config(Manager *m, Config *c) {
        if (!streq_ptr(c->daemon.cgroup_root, m->config->daemon.cgroup_root))
                log_warning("CgroupRoot= changed; it takes effect at the next restart");
        if (c->daemon.history_samples != m->config->daemon.history_samples ||
            c->daemon.history_cgroups != m->config->daemon.history_cgroups)
                log_warning("[History] Samples= or Cgroups= changed; it takes effect at the next restart");
        /* The merging was sized at start for the tick then (history_new_for_tick()). */
        if (m->history && m->history->coarse > 0 &&
            (uint64_t) m->history->factor * c->daemon.interval_usec > UINT32_MAX - 1)
                log_warning("[Daemon] Interval= is now longer than the sample history's merging was sized for: %zu "
                            "samples merged to one span more than 71 minutes, which their figures cannot "
                            "hold (held at the most); restart the daemon to merge fewer",
                            m->history->factor);
        /* Policies point into the old configuration: detach before freeing it. */
        for (size_t i = 0; i < m->observer->cgroups.n; i++)
                m->observer->cgroups.entries[i].policy = NULL;
        /* Triggers that failed are tried again with the new settings. */
        trigger_set_forget_failed(&m->triggers);
        config_free(m->config);
        m->config = c;
        m->config_generation++;
        manager_apply_log_level(&m->args, m->config);
        log_info("Configuration reloaded: %zu files, %zu policies", m->config->n_files, m->config->n_policies);
}

int manager_reload(Manager *m, ConfDiag *ret_diag) {
        _cleanup_(config_freep) Config *c = NULL;
        ConfDiag diag = {};
        int r;

        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration",
                          manager_now_usec(m));
        r = config_load(m->args.config_root, &c, &diag);
        if (r < 0)
                log_refused(&diag, r);
        else
                swap_config(m, TAKE_PTR(c));
        if (ret_diag)
                *ret_diag = diag;
        else
                conf_diag_clear(&diag);
        free(m->status);
        m->status = NULL;
        (void) manager_rescan(m);
        (void) sd_notify(false, "READY=1");
        return r < 0 ? r : 0;
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        if (si->ssi_signo == SIGHUP) {
                (void) manager_reload(m, NULL);
                return 0;
        }
        log_info("Received SIG%s, stopping", si->ssi_signo == SIGTERM ? "TERM" : "INT");
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
        return sd_event_exit(m->event, 0);
}

static int add_timer(Manager *m, sd_event_source **s, uint64_t usec, sd_event_time_handler_t cb, const char *name) {
        int r = sd_event_add_time_relative(m->event, s, CLOCK_MONOTONIC, usec, 0, cb, m);

        if (r < 0)
                return log_error_errno(r, "Cannot create the %s timer: %m", name);
        (void) sd_event_source_set_description(*s, name);
        return 0;
}

static int add_sources(Manager *m) {
        static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
        int r;

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
        r = manager_watch_cgroups(m);
        if (r < 0)
                return r;
        r = dirty_watch_init(&m->dirty_watch, m->event, m->observer->host, on_dirty_rise, m);
        if (r < 0)
                return r;
        r = sd_event_add_defer(m->event, &m->slice_source, on_slice, m);
        if (r >= 0)
                r = sd_event_source_set_priority(m->slice_source, MANAGER_SLICE_PRIORITY);
        if (r >= 0)
                r = sd_event_source_set_enabled(m->slice_source, SD_EVENT_OFF);
        if (r < 0)
                return log_error_errno(r, "Cannot create the tick's slice source: %m");
        (void) sd_event_source_set_description(m->slice_source, "tick-slice");
        /* Sends WATCHDOG=1 at half of WatchdogSec= when the service manager asks. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Cannot enable the watchdog: %m");
        return 0;
}

static void on_unit_state(const char *unit, UnitState state, void *userdata) {
        Manager *m = userdata;

        if (state == UNIT_STATE_STOPPING)
                log_debug("%s is stopping: its throttles go and none is set until it is gone", unit);
        if (!unit || state != UNIT_STATE_OTHER)
                actuator_unit_stopping(m->actuator, unit, state == UNIT_STATE_STOPPING);
}

/*
 * systemd's units, when the daemon watches the host's own tree on a system
 * that systemd runs: a stopping unit's throttles are lifted as the stop
 * begins. Anything else (no bus, a test tree) goes on without, said once.
 */
static void add_unit_watch(Manager *m) {
        int r;

        if (!streq(m->args.proc_root ?: "/proc", "/proc") || sd_booted() <= 0)
                return;
        r = unit_watch_new(m->event, on_unit_state, m, &m->units);
        if (r < 0)
                log_full_errno(LOG_NOTICE, r, "Cannot watch systemd's units, on its socket or the system bus (%m); a stopping unit's "
                                 "throttles are lifted once its cgroup is empty");
}

/* The persistent directory, made if missing (systemd's StateDirectory= makes it for the service;
 * a daemon started by hand may be the first to use it). A failure is said once: the capacities
 * and the history are then kept for this run only. */
static void make_persistent_dir(Manager *m) {
        const char *dir = manager_persistent_dir(m);

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                log_warning_errno(errno, "Cannot make %s (%m): device capacities and the sample history will "
                                  "not outlive this run", dir);
}

/* What a previous run learnt of the devices; a file that is missing is no error, one that is odd is said and ignored. */
static int load_capacities(Manager *m) {
        _cleanup_(conf_diag_clear) ConfDiag diag = {};
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        if (asprintf(&m->capacities_file, "%s/devices", manager_persistent_dir(m)) < 0)
                return -ENOMEM;
        r = conf_file_read(m->capacities_file, DEVSTAT_FILE_MAX, &text, &size, &diag);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                log_warning_errno(r, "Ignoring the device capacities in %s: %m", m->capacities_file);
        else
                (void) devstat_load_text(&m->observer->devices, text, size, m->capacities_file);
        return 0;
}

static int add_actuator(Manager *m) {
        _cleanup_free_ char *ledger_file = NULL;

        if (asprintf(&ledger_file, "%s/throttles", manager_state_dir(m)) < 0)
                return -ENOMEM;
        return actuator_new(&(ActuatorArgs) { .event = m->event, .ledger_file = ledger_file,
                                              .proc_root = m->args.proc_root, .page_size = m->observer->page_size,
                                              .events = m->events, .ops = &actuator_ops, .userdata = m },
                            &m->actuator);
}

/* The device queues' own ledger beside the throttles': its entries name a device, not a cgroup. */
static int add_queues(Manager *m) {
        _cleanup_free_ char *ledger_file = NULL;

        if (asprintf(&ledger_file, "%s/queues", manager_state_dir(m)) < 0)
                return -ENOMEM;
        return queue_depth_new(&(QueueDepthArgs) { .event = m->event, .ledger_file = ledger_file,
                                                   .sys_fd = m->observer->host->sys_fd, .events = m->events,
                                                   .changed = on_throttles_changed, .userdata = m },
                               &m->queues);
}

int manager_new(const ManagerArgs *args, Config *config, const char *cgroup_root, Manager **ret) {
        _cleanup_(config_freep) Config *c = config;
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        int r;

        if (!m)
                return -ENOMEM;
        m->args = *args;
        m->config = TAKE_PTR(c);
        m->swap_log = (RateLimit) RATELIMIT_INIT(60 * USEC_PER_SEC, 6);
        write_runner_init(&m->write_runner);
        action_log_init(&m->actions);
        m->events = event_log_new();
        if (!m->events)
                return -ENOMEM;
        r = observer_new(cgroup_root, args->proc_root ?: "/proc", args->sys_root ?: "/sys", &m->observer);
        if (r < 0)
                return r;
        alloc_runner_init(&m->alloc_runner, host_read_own_cgroup(m->observer->host));
        r = sd_event_new(&m->event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m");
        trigger_set_init(&m->triggers, m->event, on_pressure, m);
        make_persistent_dir(m);
        r = load_capacities(m);
        if (r < 0)
                return r;
        r = add_actuator(m);
        if (r < 0)
                return r;
        r = add_queues(m);
        if (r < 0)
                return r;
        add_unit_watch(m);
        manager_load_history(m);
        r = add_sources(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/*
 * io.max's throttling readied on every disk at start: since Linux 6.9 the
 * first io.max write naming a disk freezes its queue until every request in
 * flight is done (blkthrottle.h), and that first write would otherwise be a
 * cap, on the disk that is saturated, from the loop. Off the loop, in a
 * thread of its own: a disk whose queue drains slowly holds that thread
 * alone. A stop asks it to end before the next disk and waits 1.5 s for it;
 * the kernel's freeze itself cannot be interrupted, and the process ends
 * only once the one in progress does (the devices whose queue may never
 * drain are not written: blkthrottle.h).
 */
typedef struct PrimeTask {
        Task task;
        int sys_fd, root_fd;            /* its own (dup()s): the loop may close its fds while it runs */
        char *own;                      /* the daemon's cgroup (NULL: unknown) */
        int r;
        BlkThrottlePrimed primed;
} PrimeTask;

static void prime_free(PrimeTask *p) {
        closep(&p->sys_fd);
        closep(&p->root_fd);
        free(p->own);
        free(p);
}

static void prime_run(Task *t) {
        PrimeTask *p = (PrimeTask *) t;

        p->r = blkthrottle_prime(p->sys_fd, p->root_fd, p->own, taskq_stopping, &p->primed);
}

static void prime_done(Task *t, void *userdata) {
        PrimeTask *p = (PrimeTask *) t;
        const BlkThrottlePrimed *d = &p->primed;
        Manager *m = userdata;

        if (p->r == -EOPNOTSUPP)
                log_debug("No io.max below the cgroup root (the io controller is not enabled there): no disk's "
                          "throttling to ready");
        else if (p->r < 0)
                log_full_errno(LOG_NOTICE, p->r, "Cannot ready io.max's throttling on the disks (%m): the first "
                               "cap on a disk may wait for its queue to drain");
        else if (d->written == 0)
                log_debug("io.max's throttling readied on no disk (%zu refused)", d->failed);
        else
                log_full_errno(d->slowest_usec >= 100 * USEC_PER_MSEC ? LOG_INFO : LOG_DEBUG, 0,
                               "io.max's throttling readied on %zu disk(s) through /%s (the slowest, %" PRIu32
                               ":%" PRIu32 ", in %" PRIu64 " ms), %zu refused", d->written, d->target,
                               d->slowest_major, d->slowest_minor, d->slowest_usec / USEC_PER_MSEC, d->failed);
        if (*d->target && !d->removed)
                log_notice("Cannot remove the cgroup %s/%s made to ready io.max's throttling; it holds nothing: "
                           "the next start removes it, or rmdir it by hand", m->observer->root->path, d->target);
        prime_free(p);
}

static void prime_drop(Task *t, void *userdata) {
        prime_free((PrimeTask *) t);
}

static void prime_io_throttling(Manager *m) {
        PrimeTask *p;
        int r;

        if (!m->observer->root->is_cgroup2 || m->observer->host->sys_fd < 0)
                return;
        r = taskq_new(m->event, "io-prime", 1, true, m, &m->prime_queue);
        if (r >= 0 && !(p = calloc(1, sizeof(PrimeTask))))
                r = -ENOMEM;
        if (r < 0) {
                log_full_errno(LOG_NOTICE, r, "Cannot ready io.max's throttling on the disks (%m): the first cap "
                               "on a disk may wait for its queue to drain");
                return;
        }
        *p = (PrimeTask) { .task = { .run = prime_run, .done = prime_done, .drop = prime_drop },
                           .sys_fd = fcntl(m->observer->host->sys_fd, F_DUPFD_CLOEXEC, 3),
                           .root_fd = fcntl(m->observer->root->fd, F_DUPFD_CLOEXEC, 3),
                           .own = host_read_own_cgroup(m->observer->host) };
        r = p->sys_fd < 0 || p->root_fd < 0 ? negative_errno() : taskq_submit(m->prime_queue, &p->task);
        if (r < 0) {
                prime_free(p);
                log_full_errno(LOG_NOTICE, r, "Cannot ready io.max's throttling on the disks (%m)");
        }
}

int manager_run(Manager *m) {
        int r;

        prime_io_throttling(m);
        r = manager_rescan(m);
        if (r < 0)
                return log_error_errno(r, "First scan of %s failed: %m", m->observer->root->path);
        /* Throttles a previous run left behind are restored before anything is decided. */
        (void) actuator_recover(m->actuator);
        (void) queue_depth_recover(m->queues);
        r = manager_tick(m);
        if (r < 0)
                return log_error_errno(r, "First sample of %s failed: %m", m->observer->root->path);
        log_info("Watching %zu cgroups under %s, %zu policies, %zu PSI triggers, tick every %" PRIu64 "ms",
                 m->observer->cgroups.n, m->observer->root->path, m->config->n_policies,
                 trigger_set_armed(&m->triggers), m->config->daemon.interval_usec / USEC_PER_MSEC);
        (void) sd_notify(false, "READY=1");
        r = sd_event_loop(m->event);
        m->stop_began_usec = now_usec(CLOCK_MONOTONIC);
        /* Every worker told to stop before any is waited for: they wait out one 1.5 s together. */
        taskq_stop(m->prime_queue);
        actuator_stop_jobs(m->actuator);
        queue_depth_stop_jobs(m->queues);
        actuator_restore_all(m->actuator);
        queue_depth_restore_all(m->queues);
        log_debug("Stop: throttles restored in %" PRIu64 "us", now_usec(CLOCK_MONOTONIC) - m->stop_began_usec);
        if (m->observer->devices.known_changed)
                (void) devstat_save(&m->observer->devices, m->capacities_file);
        manager_save_history(m, manager_now_usec(m));
        log_debug("Stop: capacities and history saved %" PRIu64 "us after it began",
                  now_usec(CLOCK_MONOTONIC) - m->stop_began_usec);
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        trigger_set_clear(&m->triggers);
        unit_watch_free(m->units);
        actuator_free(m->actuator);
        worker_set_swap_congested(false);
        queue_depth_free(m->queues);
        taskq_free(m->prime_queue);
        if (m->stop_began_usec)
                log_debug("Stop: the workers joined or abandoned %" PRIu64 "us after it began",
                          now_usec(CLOCK_MONOTONIC) - m->stop_began_usec);
        sd_event_source_disable_unref(m->tick_source);
        sd_event_source_disable_unref(m->slice_source);
        sd_event_source_disable_unref(m->rescan_source);
        sd_event_source_disable_unref(m->cgroup_events_source);
        dirty_watch_free(&m->dirty_watch);
        for (size_t i = 0; i < ELEMENTSOF(m->signal_sources); i++)
                sd_event_source_disable_unref(m->signal_sources[i]);
        sd_event_unref(m->event);
        observer_free(m->observer);
        history_free(m->history);
        alloc_runner_done(&m->alloc_runner);
        config_free(m->config);
        event_log_free(m->events);
        free(m->status);
        free(m->status_key);
        free(m->capacities_file);
        free(m);
        return NULL;
}
