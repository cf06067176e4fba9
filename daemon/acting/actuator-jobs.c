/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The reclaim and writeback jobs of both points and of an operator's
 * one-shot actions, and what comes back from the worker: a throttle write's
 * result caught up in the ledger, a writeback said with its event, the
 * others handed on through ActuatorOps.job_done.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "log.h"
#include "message-ids.h"
#include "parse-util.h"
#include "throttle.h"
#include "util.h"

int actuator_run_job(Actuator *a, uint64_t cgroup_id, const Job *job) {
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, NULL, &err);
        Job j = *job;

        if (job->kind == JOB_FILE_WRITE)
                return -EINVAL;         /* a throttle's write goes through the ledger (actuator_apply()) */
        if (!cg)
                return err;
        /* A job carried on from an earlier one of the same request keeps its `shared`. */
        return actuator_submit(a, cg, &j, (PendingJob) { .kind = job->kind, .action_id = job->action_id,
                                                          .shared = job->shared });
}

uint64_t actuator_running_action(const Actuator *a, uint64_t *ret_started) {
        WorkerRunning running[WORKER_LANES];
        size_t n = a->worker ? worker_running(a->worker, running) : 0;

        /* Taken by the thread but not begun (no start time yet): still queued, as far as anyone can tell. */
        for (size_t k = 0; k < n; k++)
                for (size_t i = 0; running[k].started_usec && i < a->n_pending; i++)
                        if (a->pending[i].cookie == running[k].cookie && a->pending[i].action_id) {
                                *ret_started = running[k].started_usec;
                                return a->pending[i].action_id;
                        }
        return 0;
}

/* "12.0M" or "unknown" for a dirty+writeback figure. */
static const char *dirty_text(char buf[static FORMAT_SIZE_MAX], uint64_t v) {
        return v == UINT64_MAX ? "unknown" : format_size(buf, v);
}

static void writeback_event(Actuator *a, const Job *job, const char *unit) {
        char f_files[48], f_dur[48], f_commits[48], f_action[48], f_before[48], f_after[48],
             before[FORMAT_SIZE_MAX], after[FORMAT_SIZE_MAX], done[128] = "";
        const char *fields[10] = { f_files, f_dur, f_commits, job->interrupted ? "BUDGET_REACHED=yes" :
                                   "BUDGET_REACHED=no", job->result < 0 ? "FAILED=yes" : "FAILED=no" };
        size_t n = 5;

        snprintf(f_files, sizeof(f_files), "FILES=%" PRIu64, job->files);
        snprintf(f_dur, sizeof(f_dur), "DURATION_USEC=%" PRIu64, job->duration_usec);
        snprintf(f_commits, sizeof(f_commits), "BTRFS_COMMITS=%" PRIu64, job->commits);
        if (job->action_id) {
                snprintf(f_action, sizeof(f_action), "ACTION_ID=%" PRIu64, job->action_id);
                fields[n++] = f_action;
        }
        /* The figures the job could read; none in place of one it could not. */
        if (job->dirty_before != UINT64_MAX) {
                snprintf(f_before, sizeof(f_before), "DIRTY_BEFORE=%" PRIu64, job->dirty_before);
                fields[n++] = f_before;
        }
        if (job->dirty_after != UINT64_MAX) {
                snprintf(f_after, sizeof(f_after), "DIRTY_AFTER=%" PRIu64, job->dirty_after);
                fields[n++] = f_after;
        }
        if (job->to_completion)
                snprintf(done, sizeof(done), "; dirty+writeback %s -> %s", dirty_text(before, job->dirty_before),
                         dirty_text(after, job->dirty_after));
        event_record(a->events, &(LogEvent) { .level = LOG_INFO, .message_id = MESSAGE_WRITE_POINT,
                                              .cgroup = job->path, .unit = unit, .action = "writeback",
                                              .fields = fields },
                     "%s: writeback %s %" PRIu64 " files in %" PRIu64 "ms%s%s%s%s", job->path,
                     job->to_completion ? "of" : "started on", job->files, job->duration_usec / USEC_PER_MSEC,
                     job->commits ? " and a btrfs commit" : "", job->interrupted ? " (time budget reached)" : "",
                     job->result < 0 ? " (failed)" : "", done);
}

/*
 * A memory.high write came back: the value is in place (an interrupted write
 * set it too; only its reclaim stopped). One cancelled before it was made
 * changed nothing, and so did one that returned before the newer value was
 * written from the loop. One that may have landed after that is taken as in
 * place, and caught up.
 */
static void file_write_done(Actuator *a, const Job *job, const PendingJob *p) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, p->cgroup_id, &unit, &err);
        ThrottleEntry *t = cg ? ledger_find(&a->ledger, cg->path, p->throttle, p->major, p->minor) : NULL;

        if (job->result < 0 && job->result != -ECANCELED && !job->interrupted) {
                /* A unit that stopped: its cgroup went with the write on its way, and the entry with it. */
                if ((job->result == -ENOENT || job->result == -ENODEV) && (err == -ENODEV || (cg && cgroup_gone(cg))))
                        log_info("%s: gone before %s=%s was written", job->path, job->file, job->data);
                else
                        log_warning_errno(job->result, "%s: writing %s=%s failed: %m", job->path, job->file, job->data);
                return;
        }
        if (!t)
                return;
        if (p->superseded_usec && job->result != -ECANCELED && job->finished_usec >= p->superseded_usec) {
                /* Landed before or after the newer value (written from the loop, or queued behind it):
                 * the file says which. */
                uint64_t current;

                t->applied = throttle_read(cg, t->kind, t->major, t->minor, &current) >= 0 ? current : p->value;
        } else if (job->swap_deferred && !p->superseded_usec) {
                /* Not written under the usage while a swap disk is congested (worker.c): the file holds
                 * what the job last wrote, if anything (a value found there otherwise is not taken for
                 * ours). Asked again once the disk is not congested, not at this return. */
                char want[24], reason[160];
                uint64_t before = t->applied;
                bool wrote = job->high_written && job->high_written != t->applied;

                t->swap_deferred = true;
                if (wrote)
                        t->applied = job->high_written;
                /* Said even when nothing was written: the value asked is not in the file, and this is why. */
                actuator_format_value(p->value, want, sizeof(want));
                snprintf(reason, sizeof(reason), "about its usage, not %s, while a swap disk is congested: "
                         "its tasks reclaim as they allocate", want);
                actuator_throttle_event(a, "defer-for-swap", unit, t, before, t->applied, reason);
                if (wrote)
                        (void) actuator_persist(a);
                return;
        } else if (job->result != -ECANCELED && !p->superseded_usec) {
                t->applied = p->value;
                t->swap_deferred = false;
        }
        /* Something else was asked while the write was on its way (a lift, another value): catch up. */
        if (throttle_effective(t) != t->applied && !actuator_write_in_flight(a, t))
                (void) actuator_apply(a, cg, t);
        if (!throttle_requested(t) && t->applied == t->original && !actuator_write_in_flight(a, t))
                ledger_remove(&a->ledger, t);
        (void) actuator_persist(a);
}

void actuator_on_job_done(const Job *job, void *userdata) {
        Actuator *a = userdata;
        PendingJob p = {};
        const char *unit = NULL;
        Job shared;

        for (size_t i = 0; i < a->n_pending; i++)
                if (a->pending[i].cookie == job->cookie) {
                        p = a->pending[i];
                        a->pending[i] = a->pending[--a->n_pending];
                        break;
                }
        if (!p.cookie)
                return;
        if (p.kind == JOB_FILE_WRITE) {
                file_write_done(a, job, &p);
                return;
        }
        if (p.kind == JOB_WRITEBACK) {
                (void) lookup(a, p.cgroup_id, &unit);
                writeback_event(a, job, unit);
        }
        if (p.shared) {
                shared = *job;
                shared.shared = true;
                job = &shared;
        }
        a->ops->job_done(job, p.cgroup_id, a->userdata);
}

void actuator_stop_jobs(Actuator *a) {
        worker_stop(a->worker);
}

size_t actuator_jobs_pending(const Actuator *a) {
        return a->n_pending;
}

Worker *actuator_worker(Actuator *a) {
        return a->worker;
}
