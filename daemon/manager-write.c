/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point wired to the daemon: its inputs gathered from the
 * observer, its plan carried out through the throttle ledger (recorded
 * before applied, restored on stop, checked every tick, never fought over)
 * and the worker, and every decision made a structured event.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "manager.h"
#include "throttle.h"
#include "util.h"

#define MESSAGE_WRITE_POINT "c7d2e9f04b1a4e6f8d3c2b1a09f8e7d6"
#define MESSAGE_THROTTLE "e1f2a3b4c5d64e7f8091a2b3c4d5e6f7"

static CgEntry *entry_by_id(Manager *m, uint64_t id) {
        return cgtable_find(&m->observer->cgroups, id);
}

static void format_value(uint64_t v, char *buf, size_t size) {
        if (v == THROTTLE_NONE)
                snprintf(buf, size, "max");
        else
                snprintf(buf, size, "%" PRIu64, v);
}

/* One event for a throttle change, with the fields an operator filters on. */
static void throttle_event(Manager *m, int level, const char *action, const CgEntry *e, const ThrottleEntry *t,
                           uint64_t before, uint64_t after, const char *reason, bool observe) {
        char f_dev[48], f_before[48], f_after[48], f_reason[200], f_obs[32], what[48], b[24], a[24];
        const char *fields[] = { f_dev, f_before, f_after, f_reason, f_obs, NULL };

        format_value(before, b, sizeof(b));
        format_value(after, a, sizeof(a));
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, t->major, t->minor);
        snprintf(f_before, sizeof(f_before), "BEFORE=%s", b);
        snprintf(f_after, sizeof(f_after), "AFTER=%s", a);
        snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
        snprintf(f_obs, sizeof(f_obs), "OBSERVE=%s", observe ? "yes" : "no");
        manager_event(m, &(LogEvent) { .level = level, .message_id = MESSAGE_THROTTLE, .cgroup = t->path,
                                       .unit = e ? e->unit : NULL, .action = action, .fields = fields },
                      "%s: %s%s %s -> %s (%s)", t->path, observe ? "would set " : "",
                      throttle_describe(t, what, sizeof(what)), b, a, reason);
}

static bool write_in_flight(Manager *m, const ThrottleEntry *t) {
        for (size_t i = 0; i < m->n_pending; i++)
                if (m->pending[i].kind == JOB_WRITE && m->pending[i].cgroup_id == t->cgroup_id &&
                    m->pending[i].throttle == t->kind && m->pending[i].major == t->major &&
                    m->pending[i].minor == t->minor)
                        return true;
        return false;
}

int manager_submit_job(Manager *m, CgEntry *e, Job *job, JobKind kind, ThrottleKind throttle, uint32_t major,
                  uint32_t minor, uint64_t value) {
        int r;

        if (m->n_pending >= WORKER_QUEUE_MAX)
                return -EBUSY;
        job->kind = kind;
        job->cookie = ++m->next_cookie;
        snprintf(job->path, sizeof(job->path), "%s", e->cg->path);
        r = worker_submit(m->worker, job, e->cg->dirfd);
        if (r < 0)
                return r;
        m->pending[m->n_pending++] = (struct PendingJob) {
                .cookie = job->cookie, .kind = kind, .cgroup_id = e->cg->id, .throttle = throttle,
                .major = major, .minor = minor, .value = value,
        };
        return 0;
}

/* Writes the entry's effective value: io.max at once, memory.high through the
 * worker (lowering it makes the kernel reclaim in the writer's context). */
static int throttle_apply(Manager *m, CgEntry *e, ThrottleEntry *t) {
        uint64_t v = throttle_effective(t);
        char buf[64];
        Job job = { .budget_usec = 5 * USEC_PER_SEC };
        int r;

        throttle_format(t->kind, t->major, t->minor, v, buf, sizeof(buf));
        if (t->kind == THROTTLE_IO_WBPS) {
                r = cgroup_write(e->cg, "io.max", buf);
                if (r >= 0)
                        t->applied = v;
                return r;
        }
        snprintf(job.file, sizeof(job.file), "memory.high");
        snprintf(job.data, sizeof(job.data), "%s", buf);
        return manager_submit_job(m, e, &job, JOB_WRITE, t->kind, 0, 0, v);
}

static void ledger_persist(Manager *m) {
        int r = ledger_save(&m->ledger);

        if (r < 0)
                log_warning_errno(r, "Cannot write the throttle ledger %s: %m", strna(m->ledger.file));
}

static void io_missing(Manager *m, const CgEntry *e) {
        if (m->io_missing_logged)
                return;
        m->io_missing_logged = true;
        log_warning("%s has no io.max: the io controller is not enabled for it. Enable it in its parent's "
                    "cgroup.subtree_control (systemd: IOAccounting=yes on the unit or a slice above it); "
                    "write caps are skipped, everything else goes on", e->cg->path);
}

/* A point asks for a throttle value; recorded in the ledger before it is written. */
int manager_throttle_request(Manager *m, CgEntry *e, ThrottleKind kind, uint32_t major, uint32_t minor,
                            ThrottlePoint point, uint64_t value, const char *reason) {
        ThrottleEntry *t = ledger_find(&m->ledger, e->cg->path, kind, major, minor);
        uint64_t current, before;
        int r;

        /* The kernel keeps memory.high in pages: a value it would round is
         * rounded here, or the next check would take it for someone else's. */
        if (kind == THROTTLE_MEMORY_HIGH && value != THROTTLE_NONE)
                value = value / m->observer->page_size * m->observer->page_size;

        if (!t) {
                r = throttle_read(e->cg, kind, major, minor, &current);
                if (r < 0)
                        return r;
        } else
                current = t->applied;
        r = ledger_request(&m->ledger, e->cg->path, e->cg->id, kind, major, minor, point, value, reason, current, &t);
        if (r < 0)
                return r;
        before = t->applied;
        if (throttle_effective(t) == before)
                return 0;
        ledger_persist(m);
        r = throttle_apply(m, e, t);
        if (r < 0) {
                ledger_release(&m->ledger, e->cg->path, kind, major, minor, point);
                if (!throttle_requested(t) && t->applied == t->original)
                        ledger_remove(&m->ledger, t);
                ledger_persist(m);
                return r;
        }
        throttle_event(m, LOG_NOTICE, kind == THROTTLE_IO_WBPS ? "cap-writes" :
                       point == POINT_WRITE ? "dirty-budget" : "throttle-allocations", e, t, before,
                       throttle_effective(t), reason, false);
        if (kind == THROTTLE_IO_WBPS)
                ledger_persist(m);
        return 0;
}

int manager_throttle_withdraw(Manager *m, CgEntry *e, uint64_t cgroup_id, ThrottleKind kind, uint32_t major,
                             uint32_t minor, ThrottlePoint point, const char *reason) {
        ThrottleEntry *t = NULL;
        uint64_t before;
        int r = 0;

        for (size_t i = 0; i < m->ledger.n && !t; i++)
                if (m->ledger.entries[i].cgroup_id == cgroup_id && m->ledger.entries[i].kind == kind &&
                    (kind != THROTTLE_IO_WBPS || (m->ledger.entries[i].major == major &&
                                                  m->ledger.entries[i].minor == minor)))
                        t = &m->ledger.entries[i];
        if (!t)
                return 0;
        t->requested[point] = THROTTLE_NONE;
        t->reason[point][0] = '\0';
        before = t->applied;
        if (e && throttle_effective(t) != before) {
                r = throttle_apply(m, e, t);
                if (r >= 0)
                        throttle_event(m, LOG_NOTICE, kind == THROTTLE_IO_WBPS ? "lift-cap" : "restore-memory-high",
                                       e, t, before, throttle_effective(t), reason, false);
        }
        if (!throttle_requested(t) && (!e || (t->applied == t->original && !write_in_flight(m, t))))
                ledger_remove(&m->ledger, t);
        ledger_persist(m);
        return r;
}

/* ---- the write point ---- */

static size_t gather(Manager *m, WpCgroup *out, size_t max) {
        const SystemSample *sys = observer_system_sample(m->observer);
        uint64_t host_mem = sys && (sys->meminfo_found & (1u << MEMINFO_MEM_TOTAL)) ? sys->meminfo[MEMINFO_MEM_TOTAL] : 0;
        size_t n = 0;

        for (size_t i = 0; i < m->observer->cgroups.n && n < max; i++) {
                CgEntry *e = &m->observer->cgroups.entries[i];
                const CgroupSample *s = cg_entry_sample(e);
                const Policy *p = e->policy;
                uint64_t limit = host_mem;

                if (!p || p->mode == POLICY_MODE_OFF || e->gone || !s)
                        continue;
                if ((e->limits.have & (1u << LIMIT_MAX)) && e->limits.limit[LIMIT_MAX] != UINT64_MAX)
                        limit = e->limits.limit[LIMIT_MAX];
                else if ((e->limits.have & (1u << LIMIT_HIGH)) && e->limits.limit[LIMIT_HIGH] != UINT64_MAX)
                        limit = e->limits.limit[LIMIT_HIGH];
                out[n++] = (WpCgroup) {
                        .id = e->cg->id, .path = e->cg->path, .policy = p, .protect = p->protect,
                        .io_limit_ppm = p->io_pressure_limit_ppm ?: m->config->daemon.io_pressure_limit_ppm,
                        .have_io_stall = e->signals.valid && e->signals.have_io_stall,
                        .io_stall_ppm = e->signals.io_stall.some_ppm,
                        .have_memory = (s->have & SAMPLE_MEMORY_CURRENT) && (s->have & SAMPLE_MEMORY_STAT),
                        .memory_current = s->memory_current,
                        .file = sample_has_stat(s, STAT_FILE) ? s->stat[STAT_FILE] : 0,
                        .dirty = sample_dirty_bytes(s), .memory_limit = limit,
                        .devices = e->signals.devices, .n_devices = e->signals.valid ? e->signals.n_devices : 0,
                };
        }
        return n;
}

static void observe_event(Manager *m, const WpAction *a, const CgEntry *e) {
        char f_reason[200];
        const char *fields[] = { f_reason, "OBSERVE=yes", NULL };

        snprintf(f_reason, sizeof(f_reason), "REASON=%s", a->reason);
        manager_event(m, &(LogEvent) { .level = LOG_INFO, .message_id = MESSAGE_WRITE_POINT,
                                       .cgroup = a->path, .unit = e ? e->unit : NULL,
                                       .action = wp_action_to_string(a->kind), .fields = fields },
                      "%s: would %s (value %" PRIu64 ", device %" PRIu32 ":%" PRIu32 "): %s", a->path,
                      wp_action_to_string(a->kind), a->value, a->major, a->minor, a->reason);
}

static int execute(Manager *m, const WpAction *a) {
        CgEntry *e = entry_by_id(m, a->cgroup_id);

        if (a->observe) {
                observe_event(m, a, e);
                return 0;
        }
        switch (a->kind) {
        case WP_SET_CAP:
                if (!e)
                        return -ENODEV;
                return manager_throttle_request(m, e, THROTTLE_IO_WBPS, a->major, a->minor, POINT_WRITE, a->value, a->reason);
        case WP_LIFT_CAP:
                return manager_throttle_withdraw(m, e, a->cgroup_id, THROTTLE_IO_WBPS, a->major, a->minor, POINT_WRITE,
                                         a->reason);
        case WP_SET_BUDGET:
                if (!e)
                        return -ENODEV;
                return manager_throttle_request(m, e, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, a->value, a->reason);
        case WP_LIFT_BUDGET:
                return manager_throttle_withdraw(m, e, a->cgroup_id, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, a->reason);
        case WP_WRITEBACK:
                return e ? manager_writeback(m, e, a->reason) : -ENODEV;
        }
        return -EINVAL;
}

void manager_write_point(Manager *m, uint64_t now) {
        static WpCgroup cgroups[WP_CGROUPS_MAX];
        static WpPlan plan;
        WpDevice devices[DEVSTAT_MAX];
        const SystemSignals *g = &m->observer->system_signals;
        WpSettings st = {
                .hold_usec = m->config->daemon.cap_hold_usec,
                .write_rate_min_ppm = m->config->daemon.write_rate_min_ppm,
                .dirty_ratio_pct = m->dirty_ratio_pct,
                .global_guard_ppm = m->config->daemon.global_dirty_guard_ppm,
                .host_dirty = g->dirty_bytes, .host_dirty_threshold = g->dirty_threshold_bytes,
        };
        size_t n = gather(m, cgroups, ELEMENTSOF(cgroups)), nd = 0;

        for (size_t i = 0; i < m->observer->devices.n; i++) {
                const DevStat *d = &m->observer->devices.dev[i];
                devices[nd++] = (WpDevice) { d->major, d->minor, d->write_rate, d->capacity };
        }
        write_point_decide(cgroups, n, devices, nd, &st, now, &m->write_point, &plan);
        if (plan.truncated)
                log_warning("The write point's plan was cut at %d actions", WP_ACTIONS_MAX);
        for (size_t i = 0; i < plan.n; i++) {
                const WpAction *a = &plan.actions[i];
                int r = execute(m, a);

                if (r >= 0)
                        continue;
                write_point_forget(&m->write_point, a);
                if (r == -ENOENT && a->kind == WP_SET_CAP) {
                        const CgEntry *e = entry_by_id(m, a->cgroup_id);
                        if (e)
                                io_missing(m, e);
                } else if (r != -ENODEV && r != -EBUSY)
                        manager_action_failed(m, r, a->path, wp_action_to_string(a->kind));
        }
}

int manager_writeback(Manager *m, CgEntry *e, const char *reason) {
        Job job = { .budget_usec = 10 * USEC_PER_SEC };
        int r = manager_submit_job(m, e, &job, JOB_WRITEBACK, 0, 0, 0, 0);

        if (r >= 0)
                log_debug("%s: writeback queued (%s)", e->cg->path, reason);
        return r;
}

/* ---- throttles: start, every tick, stop ---- */

/*
 * Puts the original back if the file still holds what we (or a write of ours
 * that did not reach the ledger) set. Returns 1 if restored, 0 if the value is
 * someone else's or the cgroup is gone, a negative errno if the write failed.
 */
static int restore_if_ours(Manager *m, CgEntry *e, const ThrottleEntry *t, const char *action, const char *reason) {
        uint64_t current;
        char buf[64];
        int r;

        if (!e || !streq(e->cg->path, t->path) || throttle_read(e->cg, t->kind, t->major, t->minor, &current) < 0)
                return 0;
        if (current != t->applied && current != throttle_effective(t))
                return 0;
        r = cgroup_write(e->cg, throttle_file(t->kind),
                         throttle_format(t->kind, t->major, t->minor, t->original, buf, sizeof(buf)));
        if (r < 0)
                return log_warning_errno(r, "%s: cannot restore %s: %m", t->path, throttle_file(t->kind));
        throttle_event(m, LOG_NOTICE, action, e, t, current, t->original, reason, false);
        return 1;
}

/* After a crash: every entry that still holds our value is restored; one that
 * was changed by someone else is left as it is. The points decide afresh. */
int manager_throttles_recover(Manager *m) {
        unsigned bad_line;
        int r = ledger_load(&m->ledger, &bad_line);

        if (r < 0)
                return log_warning_errno(r, "Cannot read the throttle ledger %s: %m", strna(m->ledger.file));
        if (bad_line)
                log_warning("%s:%u: unreadable ledger line skipped", m->ledger.file, bad_line);
        for (size_t i = m->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &m->ledger.entries[i - 1];
                CgEntry *e = entry_by_id(m, t->cgroup_id);

                if (!e || !streq(e->cg->path, t->path))
                        log_info("%s: gone since the last run; its throttle record is dropped", t->path);
                else if (restore_if_ours(m, e, t, "restore-after-restart", "left by a previous run") == 0)
                        log_info("%s: %s was changed by someone else since the last run; theirs stays",
                                 t->path, throttle_file(t->kind));
                ledger_remove(&m->ledger, t);
        }
        ledger_persist(m);
        return 0;
}

static void point_forget_entry(Manager *m, const ThrottleEntry *t) {
        WpAction a = { .cgroup_id = t->cgroup_id, .major = t->major, .minor = t->minor, .previous = UINT64_MAX };

        a.kind = t->kind == THROTTLE_IO_WBPS ? WP_SET_CAP : WP_SET_BUDGET;
        write_point_forget(&m->write_point, &a);
}

/* Every tick: our values still in place? If not, theirs wins and is not fought. */
void manager_throttles_verify(Manager *m) {
        bool changed = false;

        for (size_t i = m->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &m->ledger.entries[i - 1];
                CgEntry *e = entry_by_id(m, t->cgroup_id);
                uint64_t current, before = t->applied;

                if (write_in_flight(m, t))
                        continue;
                if (!e || e->gone || throttle_read(e->cg, t->kind, t->major, t->minor, &current) < 0) {
                        point_forget_entry(m, t);
                        ledger_remove(&m->ledger, t);
                        changed = true;
                        continue;
                }
                if (!ledger_adopt_foreign(t, current))
                        continue;
                throttle_event(m, LOG_NOTICE, "foreign-change", e, t, before, current,
                               "changed by someone else: theirs wins and becomes the original", false);
                point_forget_entry(m, t);
                ledger_remove(&m->ledger, t);
                changed = true;
        }
        if (changed)
                ledger_persist(m);
}

/* Clean stop: every throttle back to what it was. Raising a limit does not block. */
void manager_throttles_restore_all(Manager *m) {
        for (size_t i = m->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &m->ledger.entries[i - 1];

                (void) restore_if_ours(m, entry_by_id(m, t->cgroup_id), t, "restore-on-stop", "daemon stopping");
                ledger_remove(&m->ledger, t);
        }
        ledger_persist(m);
}

void manager_job_done(const Job *job, void *userdata) {
        Manager *m = userdata;
        struct PendingJob p = {};
        CgEntry *e;

        for (size_t i = 0; i < m->n_pending; i++)
                if (m->pending[i].cookie == job->cookie) {
                        p = m->pending[i];
                        m->pending[i] = m->pending[--m->n_pending];
                        break;
                }
        if (!p.cookie)
                return;
        e = entry_by_id(m, p.cgroup_id);
        if (p.kind == JOB_RECLAIM) {
                manager_reclaim_done(m, job, p.cgroup_id);
                return;
        }
        if (p.kind == JOB_WRITEBACK) {
                char f_files[48], f_dur[48], f_commits[48];
                const char *fields[] = { f_files, f_dur, f_commits, NULL };

                write_point_writeback_done(&m->write_point, p.cgroup_id);
                snprintf(f_files, sizeof(f_files), "FILES=%" PRIu64, job->files);
                snprintf(f_dur, sizeof(f_dur), "DURATION_USEC=%" PRIu64, job->duration_usec);
                snprintf(f_commits, sizeof(f_commits), "BTRFS_COMMITS=%" PRIu64, job->commits);
                manager_event(m, &(LogEvent) { .level = LOG_INFO, .message_id = MESSAGE_WRITE_POINT,
                                               .cgroup = job->path, .unit = e ? e->unit : NULL,
                                               .action = "writeback", .fields = fields },
                              "%s: writeback started on %" PRIu64 " files in %" PRIu64 "ms%s%s%s", job->path,
                              job->files, job->duration_usec / USEC_PER_MSEC,
                              job->commits ? " and a btrfs commit" : "",
                              job->interrupted ? " (time budget reached)" : "",
                              job->result < 0 ? " (failed)" : "");
                return;
        }
        if (p.kind == JOB_WRITE) {
                ThrottleEntry *t = e ? ledger_find(&m->ledger, e->cg->path, p.throttle, p.major, p.minor) : NULL;
                if (job->result < 0 && !job->interrupted) {
                        log_warning_errno(job->result, "%s: writing %s=%s failed: %m", job->path, job->file, job->data);
                        return;
                }
                /* An interrupted memory.high write still set the limit; only its reclaim stopped. */
                if (t) {
                        t->applied = p.value;
                        if (!throttle_requested(t) && t->applied == t->original)
                                ledger_remove(&m->ledger, t);
                        ledger_persist(m);
                }
        }
}
