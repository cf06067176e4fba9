/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "actuator.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "message-ids.h"
#include "throttle.h"
#include "util.h"

/* A job in the worker, remembered until it reports back. */
typedef struct PendingJob {
        uint64_t cookie;
        JobKind kind;
        uint64_t cgroup_id;
        ThrottleKind throttle;          /* JOB_FILE_WRITE of a throttle */
        uint32_t major, minor;
        uint64_t value;
} PendingJob;

struct Actuator {
        Ledger ledger;
        Worker *worker;
        PendingJob pending[WORKER_QUEUE_MAX];
        size_t n_pending;
        uint64_t next_cookie;
        uint64_t page_size;
        EventLog *events;
        const ActuatorOps *ops;
        void *userdata;
};

static Cgroup *lookup(Actuator *a, uint64_t id, const char **ret_unit) {
        const char *unit = NULL;
        Cgroup *cg = a->ops->lookup(id, &unit, a->userdata);

        if (ret_unit)
                *ret_unit = unit;
        return cg;
}

static void format_value(uint64_t v, char *buf, size_t size) {
        if (v == THROTTLE_NONE)
                snprintf(buf, size, "max");
        else
                snprintf(buf, size, "%" PRIu64, v);
}

/* One event for a throttle change, with the fields an operator filters on. */
static void throttle_event(Actuator *a, const char *action, const char *unit, const ThrottleEntry *t,
                           uint64_t before, uint64_t after, const char *reason) {
        char f_dev[48], f_before[48], f_after[48], f_reason[200], what[48], b[24], v[24];
        const char *fields[] = { f_dev, f_before, f_after, f_reason, "OBSERVE=no", NULL };

        format_value(before, b, sizeof(b));
        format_value(after, v, sizeof(v));
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, t->major, t->minor);
        snprintf(f_before, sizeof(f_before), "BEFORE=%s", b);
        snprintf(f_after, sizeof(f_after), "AFTER=%s", v);
        snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
        event_record(a->events, &(LogEvent) { .level = LOG_NOTICE, .message_id = MESSAGE_THROTTLE, .cgroup = t->path,
                                              .unit = unit, .action = action, .fields = fields },
                     "%s: %s %s -> %s (%s)", t->path, throttle_describe(t, what, sizeof(what)), b, v, reason);
}

static bool same_throttle(const PendingJob *p, const ThrottleEntry *t) {
        return p->kind == JOB_FILE_WRITE && p->cgroup_id == t->cgroup_id && p->throttle == t->kind &&
               p->major == t->major && p->minor == t->minor;
}

static bool write_in_flight(const Actuator *a, const ThrottleEntry *t) {
        for (size_t i = 0; i < a->n_pending; i++)
                if (same_throttle(&a->pending[i], t))
                        return true;
        return false;
}

/* Queues `job` for cg, remembering what it is for (`p`: its kind, throttle and value). */
static int submit(Actuator *a, Cgroup *cg, Job *job, PendingJob p) {
        int r;

        if (a->n_pending >= WORKER_QUEUE_MAX)
                return -EBUSY;
        job->kind = p.kind;
        job->cookie = p.cookie = ++a->next_cookie;
        snprintf(job->path, sizeof(job->path), "%s", cg->path);
        r = worker_submit(a->worker, job, cg->dirfd);
        if (r < 0)
                return r;
        p.cgroup_id = cg->id;
        a->pending[a->n_pending++] = p;
        return 0;
}

int actuator_run_job(Actuator *a, uint64_t cgroup_id, const Job *job) {
        Cgroup *cg = lookup(a, cgroup_id, NULL);
        Job j = *job;

        if (!cg)
                return -ENODEV;
        return submit(a, cg, &j, (PendingJob) { .kind = job->kind });
}

/* Writes the entry's effective value: io.max at once, memory.high through the
 * worker (lowering it makes the kernel reclaim in the writer's context). */
static int apply(Actuator *a, Cgroup *cg, ThrottleEntry *t) {
        uint64_t v = throttle_effective(t);
        Job job = { .budget_usec = 5 * USEC_PER_SEC };
        int r;

        throttle_format(t->kind, t->major, t->minor, v, job.data, sizeof(job.data));
        if (t->kind == THROTTLE_IO_WBPS) {
                r = cgroup_write(cg, "io.max", job.data);
                if (r >= 0)
                        t->applied = v;
                return r;
        }
        snprintf(job.file, sizeof(job.file), "memory.high");
        return submit(a, cg, &job, (PendingJob) { .kind = JOB_FILE_WRITE, .throttle = t->kind, .value = v });
}

static int persist(Actuator *a) {
        int r = ledger_save(&a->ledger);

        if (r < 0)
                log_warning_errno(r, "Cannot write the throttle ledger %s: %m", strna(a->ledger.file));
        return r;
}

/* Takes back a request that could not be carried out; the entry goes if nothing else holds it. */
static void undo_request(Actuator *a, ThrottleEntry *t, ThrottlePoint point) {
        ledger_release(&a->ledger, t->path, t->kind, t->major, t->minor, point);
        if (!throttle_requested(t) && t->applied == t->original)
                ledger_remove(&a->ledger, t);
        (void) persist(a);
}

static const char *set_action(const ThrottleRequest *q) {
        if (q->kind == THROTTLE_IO_WBPS)
                return "cap-writes";
        return q->point == POINT_WRITE ? "dirty-budget" : "throttle-allocations";
}

int actuator_throttle_set(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q) {
        const char *unit;
        Cgroup *cg = lookup(a, cgroup_id, &unit);
        uint64_t value = q->value, current, before;
        ThrottleEntry *t;
        int r;

        if (!cg)
                return -ENODEV;
        /* The kernel keeps memory.high in pages: a value it would round is
         * rounded here, or the next check would take it for someone else's. */
        if (q->kind == THROTTLE_MEMORY_HIGH && value != THROTTLE_NONE)
                value = value / a->page_size * a->page_size;
        t = ledger_find(&a->ledger, cg->path, q->kind, q->major, q->minor);
        if (t)
                current = t->applied;
        else {
                r = throttle_read(cg, q->kind, q->major, q->minor, &current);
                if (r < 0)
                        return r;
        }
        r = ledger_request(&a->ledger, cg->path, cg->id, q->kind, q->major, q->minor, q->point, value, q->reason,
                           current, &t);
        if (r < 0)
                return r;
        before = t->applied;
        if (throttle_effective(t) == before)
                return 0;
        /* No record, no write: a throttle the ledger does not hold could outlive a crash. */
        r = persist(a);
        if (r >= 0)
                r = apply(a, cg, t);
        if (r < 0) {
                undo_request(a, t, q->point);
                return r;
        }
        throttle_event(a, set_action(q), unit, t, before, throttle_effective(t), q->reason);
        if (q->kind == THROTTLE_IO_WBPS)
                (void) persist(a);
        return 0;
}

static ThrottleEntry *find_by_id(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q) {
        for (size_t i = 0; i < a->ledger.n; i++) {
                ThrottleEntry *t = &a->ledger.entries[i];

                if (t->cgroup_id == cgroup_id && t->kind == q->kind &&
                    (q->kind != THROTTLE_IO_WBPS || (t->major == q->major && t->minor == q->minor)))
                        return t;
        }
        return NULL;
}

int actuator_throttle_lift(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q) {
        ThrottleEntry *t = find_by_id(a, cgroup_id, q);
        const char *unit;
        Cgroup *cg = lookup(a, cgroup_id, &unit);
        uint64_t before;
        int r = 0;

        if (!t)
                return 0;
        t->requested[q->point] = THROTTLE_NONE;
        t->reason[q->point][0] = '\0';
        before = t->applied;
        if (cg && throttle_effective(t) != before) {
                r = apply(a, cg, t);
                if (r >= 0)
                        throttle_event(a, q->kind == THROTTLE_IO_WBPS ? "lift-cap" : "restore-memory-high", unit, t,
                                       before, throttle_effective(t), q->reason);
        }
        if (!throttle_requested(t) && (!cg || (t->applied == t->original && !write_in_flight(a, t))))
                ledger_remove(&a->ledger, t);
        (void) persist(a);
        return r < 0 ? r : 1;
}

/*
 * Puts the original back if the file still holds what we (or a write of ours
 * that did not reach the ledger) set. Returns 1 if restored, 0 if the value is
 * someone else's or the cgroup is gone, a negative errno if the write failed.
 */
static int restore_if_ours(Actuator *a, const ThrottleEntry *t, const char *action, const char *reason) {
        const char *unit;
        Cgroup *cg = lookup(a, t->cgroup_id, &unit);
        uint64_t current;
        char buf[64];
        int r;

        if (!cg || !streq(cg->path, t->path) || throttle_read(cg, t->kind, t->major, t->minor, &current) < 0)
                return 0;
        if (current != t->applied && current != throttle_effective(t))
                return 0;
        r = cgroup_write(cg, throttle_file(t->kind),
                         throttle_format(t->kind, t->major, t->minor, t->original, buf, sizeof(buf)));
        if (r < 0)
                return log_warning_errno(r, "%s: cannot restore %s: %m", t->path, throttle_file(t->kind));
        throttle_event(a, action, unit, t, current, t->original, reason);
        return 1;
}

/* After a crash: every entry that still holds our value is restored; one that
 * was changed by someone else is left as it is. The points decide afresh. */
int actuator_recover(Actuator *a) {
        unsigned bad_line;
        int r = ledger_load(&a->ledger, &bad_line);

        if (r < 0)
                return log_warning_errno(r, "Cannot read the throttle ledger %s: %m", strna(a->ledger.file));
        if (bad_line)
                log_warning("%s:%u: unreadable ledger line skipped", a->ledger.file, bad_line);
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                Cgroup *cg = lookup(a, t->cgroup_id, NULL);

                if (!cg || !streq(cg->path, t->path))
                        log_info("%s: gone since the last run; its throttle record is dropped", t->path);
                else if (restore_if_ours(a, t, "restore-after-restart", "left by a previous run") == 0)
                        log_info("%s: %s was changed by someone else since the last run; theirs stays",
                                 t->path, throttle_file(t->kind));
                ledger_remove(&a->ledger, t);
        }
        (void) persist(a);
        return 0;
}

static void drop_entry(Actuator *a, ThrottleEntry *t) {
        if (a->ops->throttle_dropped)
                a->ops->throttle_dropped(t, a->userdata);
        ledger_remove(&a->ledger, t);
}

void actuator_verify(Actuator *a) {
        bool changed = false;

        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                const char *unit;
                Cgroup *cg = lookup(a, t->cgroup_id, &unit);
                uint64_t current, before = t->applied;

                if (write_in_flight(a, t))
                        continue;
                if (!cg || throttle_read(cg, t->kind, t->major, t->minor, &current) < 0) {
                        drop_entry(a, t);
                        changed = true;
                        continue;
                }
                if (!ledger_adopt_foreign(t, current))
                        continue;
                throttle_event(a, "foreign-change", unit, t, before, current,
                               "changed by someone else: theirs wins and becomes the original");
                drop_entry(a, t);
                changed = true;
        }
        if (changed)
                (void) persist(a);
}

void actuator_restore_all(Actuator *a) {
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];

                (void) restore_if_ours(a, t, "restore-on-stop", "daemon stopping");
                ledger_remove(&a->ledger, t);
        }
        (void) persist(a);
}

static void writeback_event(Actuator *a, const Job *job, const char *unit) {
        char f_files[48], f_dur[48], f_commits[48];
        const char *fields[] = { f_files, f_dur, f_commits, NULL };

        snprintf(f_files, sizeof(f_files), "FILES=%" PRIu64, job->files);
        snprintf(f_dur, sizeof(f_dur), "DURATION_USEC=%" PRIu64, job->duration_usec);
        snprintf(f_commits, sizeof(f_commits), "BTRFS_COMMITS=%" PRIu64, job->commits);
        event_record(a->events, &(LogEvent) { .level = LOG_INFO, .message_id = MESSAGE_WRITE_POINT,
                                              .cgroup = job->path, .unit = unit, .action = "writeback",
                                              .fields = fields },
                     "%s: writeback started on %" PRIu64 " files in %" PRIu64 "ms%s%s%s", job->path, job->files,
                     job->duration_usec / USEC_PER_MSEC, job->commits ? " and a btrfs commit" : "",
                     job->interrupted ? " (time budget reached)" : "", job->result < 0 ? " (failed)" : "");
}

/* A memory.high write came back: the value is in place (an interrupted write set it too; only its reclaim stopped). */
static void file_write_done(Actuator *a, const Job *job, const PendingJob *p) {
        Cgroup *cg = lookup(a, p->cgroup_id, NULL);
        ThrottleEntry *t = cg ? ledger_find(&a->ledger, cg->path, p->throttle, p->major, p->minor) : NULL;

        if (job->result < 0 && !job->interrupted) {
                log_warning_errno(job->result, "%s: writing %s=%s failed: %m", job->path, job->file, job->data);
                return;
        }
        if (!t)
                return;
        t->applied = p->value;
        if (!throttle_requested(t) && t->applied == t->original)
                ledger_remove(&a->ledger, t);
        (void) persist(a);
}

static void on_job_done(const Job *job, void *userdata) {
        Actuator *a = userdata;
        PendingJob p = {};
        const char *unit = NULL;

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
        a->ops->job_done(job, p.cgroup_id, a->userdata);
}

int actuator_new(const ActuatorArgs *args, Actuator **ret) {
        _cleanup_(actuator_freep) Actuator *a = calloc(1, sizeof(Actuator));
        int r;

        if (!a)
                return -ENOMEM;
        a->page_size = args->page_size ?: 4096;
        a->events = args->events;
        a->ops = args->ops;
        a->userdata = args->userdata;
        ledger_init(&a->ledger, args->ledger_file);
        r = worker_new(args->event, args->proc_root ?: "/proc", on_job_done, a, &a->worker);
        if (r < 0)
                return log_error_errno(r, "Cannot start the worker thread: %m");
        *ret = TAKE_PTR(a);
        return 0;
}

Actuator *actuator_free(Actuator *a) {
        if (!a)
                return NULL;
        worker_free(a->worker);
        ledger_clear(&a->ledger);
        free(a);
        return NULL;
}

const Ledger *actuator_ledger(const Actuator *a) {
        return &a->ledger;
}

size_t actuator_jobs_pending(const Actuator *a) {
        return a->n_pending;
}
