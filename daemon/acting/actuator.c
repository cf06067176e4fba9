/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "actuator.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "log.h"
#include "message-ids.h"
#include "parse-util.h"
#include "throttle.h"
#include "unit-name.h"
#include "util.h"

/* A job in the worker, remembered until it reports back. */
typedef struct PendingJob {
        uint64_t cookie;
        JobKind kind;
        uint64_t cgroup_id;
        ThrottleKind throttle;          /* JOB_FILE_WRITE of a throttle */
        uint32_t major, minor;
        uint64_t value;
        uint64_t from;                  /* memory.high: the value it steps down from (worker.c) */
        uint64_t action_id;             /* an operator's one-shot action */
        uint64_t superseded_usec;       /* CLOCK_MONOTONIC: a newer value was written from the loop then, and the
                                         * job cancelled in the worker; SUPERSEDED_BY_QUEUE: a newer value was
                                         * queued behind it; 0: not superseded */
        bool shared;                    /* JOB_RECLAIM: a memory.high lowering of its cgroup, of one above or of
                                         * one below was pending beside it at some time (Job.shared) */
        /* Its cgroup's path, as the job has it (mark_shared(): a cgroup sampled now and then holds no fd,
         * and a lookup would open one). */
        char path[sizeof(((Job *) NULL)->path)];
} PendingJob;

/* A watch of a throttled cgroup's cgroup.events. */
typedef struct EventsWatch {
        uint64_t cgroup_id;
        int wd;
} EventsWatch;

struct Actuator {
        Ledger ledger;
        int inotify_fd;                 /* cgroup.events of every cgroup the ledger holds a throttle on */
        sd_event_source *inotify_source;
        EventsWatch *watches;           /* at most one per cgroup of the ledger */
        size_t n_watches;
        Worker *worker;
        PendingJob pending[WORKER_LANES * WORKER_QUEUE_MAX];    /* WORKER_QUEUE_MAX in each lane */
        size_t n_pending;
        uint64_t next_cookie;
        uint64_t page_size;
        uint64_t high_headroom;         /* see high_takes_at_once() */
        EventLog *events;
        const ActuatorOps *ops;
        void *userdata;
        char *stopping[ACTUATOR_STOPPING_MAX];  /* units systemd is stopping, oldest first */
        size_t n_stopping;
};

/* The cgroup, or NULL: *ret_error says why (-ENODEV: gone; another errno: not now, e.g. out of fds). */
static Cgroup *lookup_why(Actuator *a, uint64_t id, const char **ret_unit, int *ret_error) {
        const char *unit = NULL;
        Cgroup *cg = NULL;
        int r = a->ops->lookup(id, &cg, &unit, a->userdata);

        if (ret_unit)
                *ret_unit = unit;
        if (ret_error)
                *ret_error = r < 0 ? r : 0;
        return r < 0 ? NULL : cg;
}

static Cgroup *lookup(Actuator *a, uint64_t id, const char **ret_unit) {
        return lookup_why(a, id, ret_unit, NULL);
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
        char f_dev[48], f_before[48], f_after[48], f_reason[200], f_knob[64], what[48], b[24], v[24];
        const char *fields[] = { f_knob, f_dev, f_before, f_after, f_reason, "OBSERVE=no", NULL };

        format_value(before, b, sizeof(b));
        format_value(after, v, sizeof(v));
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, t->major, t->minor);
        snprintf(f_before, sizeof(f_before), "BEFORE=%s", b);
        snprintf(f_after, sizeof(f_after), "AFTER=%s", v);
        snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
        snprintf(f_knob, sizeof(f_knob), "KNOB=%s", throttle_knob(t->kind));
        /* A swap hold comes and goes with each cache-only reclaim: said, not announced. */
        event_record(a->events, &(LogEvent) { .level = t->kind == THROTTLE_SWAP_MAX ? LOG_INFO : LOG_NOTICE,
                                              .message_id = MESSAGE_THROTTLE, .cgroup = t->path,
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

/* The value t holds once the writes queued for it are done: the newest one's, or the one applied. */
static uint64_t value_ahead(const Actuator *a, const ThrottleEntry *t) {
        uint64_t v = t->applied, cookie = 0;

        for (size_t i = 0; i < a->n_pending; i++)
                if (same_throttle(&a->pending[i], t) && !a->pending[i].superseded_usec &&
                    a->pending[i].cookie > cookie) {
                        cookie = a->pending[i].cookie;
                        v = a->pending[i].value;
                }
        return v;
}

/* Jobs in flight in the lane that runs jobs of this kind. */
static size_t lane_jobs(const Actuator *a, JobKind kind) {
        size_t n = 0;

        for (size_t i = 0; i < a->n_pending; i++)
                n += worker_lane(a->pending[i].kind) == worker_lane(kind);
        return n;
}

/* A memory.high write that may reclaim: one that lowers it (a raise in the worker is under the usage
 * only by the headroom, and frees nothing). */
static bool high_lowering(const PendingJob *p) {
        return p->kind == JOB_FILE_WRITE && p->throttle == THROTTLE_MEMORY_HIGH && p->value < p->from;
}

/*
 * A memory.high lowering in the worker reclaims as it steps down, from its
 * cgroup and so from the cgroups below it, and the lanes run side by side:
 * a reclaim of that cgroup, one below it or one above it pending at the
 * same time measures both in memory.current. Marks each such pair's
 * reclaim when the second of them (p) is queued.
 */
static void mark_shared(Actuator *a, PendingJob *p) {
        if (p->kind != JOB_RECLAIM && !high_lowering(p))
                return;
        for (size_t i = 0; i < a->n_pending; i++) {
                PendingJob *o = &a->pending[i];

                if (p->kind == JOB_RECLAIM ? !high_lowering(o) : o->kind != JOB_RECLAIM)
                        continue;
                if (!cgroup_paths_related(o->path, p->path))
                        continue;
                if (p->kind == JOB_RECLAIM)
                        p->shared = true;
                else
                        o->shared = true;
        }
}

/* Queues `job` for cg, remembering what it is for (`p`: its kind, throttle and value). */
static int submit(Actuator *a, Cgroup *cg, Job *job, PendingJob p) {
        int r;

        if (!a->worker)
                return -ESHUTDOWN;      /* stopped: the throttles are being restored */
        /* Counted by lane: reclaims and writebacks that fill theirs leave room for throttle writes. */
        if (lane_jobs(a, p.kind) >= WORKER_QUEUE_MAX)
                return -EBUSY;
        job->kind = p.kind;
        job->cookie = p.cookie = ++a->next_cookie;
        snprintf(job->path, sizeof(job->path), "%s", cg->path);
        r = worker_submit(a->worker, job, cg->dirfd);
        if (r < 0)
                return r;
        p.cgroup_id = cg->id;
        memcpy(p.path, job->path, sizeof(p.path));
        mark_shared(a, &p);
        a->pending[a->n_pending++] = p;
        return 0;
}

int actuator_run_job(Actuator *a, uint64_t cgroup_id, const Job *job) {
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, NULL, &err);
        Job j = *job;

        if (job->kind == JOB_FILE_WRITE)
                return -EINVAL;         /* a throttle's write goes through the ledger (apply()) */
        if (!cg)
                return err;
        /* A job carried on from an earlier one of the same request keeps its `shared`. */
        return submit(a, cg, &j, (PendingJob) { .kind = job->kind, .action_id = job->action_id,
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

/*
 * Whether the kernel takes memory.high=v without reclaiming: v is max or at
 * least what the cgroup holds now, with room for what it may charge before
 * the write (the per-CPU charge batches, and a margin: a reclaim on the loop
 * could not be interrupted). Such a write (a lift, a raise, a first
 * budget above the usage) returns at once and is made from the loop; only a
 * value under the usage, which the kernel reclaims down to in the writer's
 * context, goes through the worker.
 */
static bool high_takes_at_once(const Actuator *a, const Cgroup *cg, uint64_t v) {
        uint64_t current;

        return v == THROTTLE_NONE || (cg_dir_read_u64(cg->dirfd, "memory.current", &current) >= 0 &&
                                      current <= v && v - current >= a->high_headroom);
}

/*
 * A write superseded by one queued behind it: whenever it returned (even
 * before the newer one was queued, its return not yet seen by the loop), if
 * it ran at all its value may be in the file, which only a read can say.
 */
#define SUPERSEDED_BY_QUEUE UINT64_C(1)

/*
 * The memory.high writes for t still in the worker lose their point: a newer
 * value goes in now, from the loop (at `now`), or through the worker as the
 * job `keep` (0: none; `now` SUPERSEDED_BY_QUEUE). A lowering still stepping
 * down would otherwise hold a raise behind it for as long as the kernel
 * takes to reclaim each step.
 */
static void supersede_writes(Actuator *a, const ThrottleEntry *t, uint64_t keep, uint64_t now) {
        uint64_t cookies[ELEMENTSOF(a->pending)];
        size_t n = 0;

        for (size_t i = 0; i < a->n_pending; i++)
                if (same_throttle(&a->pending[i], t) && !a->pending[i].superseded_usec &&
                    a->pending[i].cookie != keep) {
                        a->pending[i].superseded_usec = now;
                        cookies[n++] = a->pending[i].cookie;
                }
        if (n > 0)
                (void) worker_cancel(a->worker, cookies, n);
}

/* Writes the entry's effective value: io.max and memory.swap.max at once,
 * memory.high at once where the kernel will not reclaim for it, else through
 * the worker. */
static int apply(Actuator *a, Cgroup *cg, ThrottleEntry *t) {
        uint64_t v = throttle_effective(t);
        Job job = { .budget_usec = 5 * USEC_PER_SEC };
        int r;

        throttle_format(t->kind, t->major, t->minor, v, job.data, sizeof(job.data));
        if (t->kind != THROTTLE_MEMORY_HIGH || (a->worker && high_takes_at_once(a, cg, v))) {
                uint64_t before_write = now_usec(CLOCK_MONOTONIC);

                r = cgroup_write(cg, throttle_file(t->kind), job.data);
                if (r < 0)
                        return r;
                t->applied = v;
                if (t->kind == THROTTLE_MEMORY_HIGH)
                        supersede_writes(a, t, 0, before_write);
                return 0;
        }
        snprintf(job.file, sizeof(job.file), "memory.high");
        job.headroom = a->high_headroom;
        job.ceiling = t->original;
        r = submit(a, cg, &job, (PendingJob) { .kind = JOB_FILE_WRITE, .throttle = t->kind, .value = v,
                                               .from = value_ahead(a, t) });
        if (r < 0)
                return r;
        supersede_writes(a, t, job.cookie, SUPERSEDED_BY_QUEUE);
        return 0;
}

static void watches_sync(Actuator *a);

/* Writes the ledger file after a change, and says that the throttles changed. */
static int persist(Actuator *a) {
        int r = ledger_save(&a->ledger);

        watches_sync(a);
        if (r < 0)
                log_warning_errno(r, "Cannot write the throttle ledger %s: %m", strna(a->ledger.file));
        if (a->ops->throttles_changed)
                a->ops->throttles_changed(a->userdata);
        return r;
}

/*
 * Takes back a request that could not be carried out: the point's request is
 * what it was before (`saved`, NULL for a new entry), and the entry goes only
 * if nothing holds it (no request, the original in place, no write on its way).
 */
static void undo_request(Actuator *a, ThrottleEntry *t, ThrottlePoint point, const ThrottleEntry *saved) {
        if (saved) {
                t->requested[point] = saved->requested[point];
                memcpy(t->reason[point], saved->reason[point], sizeof(t->reason[point]));
                memcpy(t->lifts_when[point], saved->lifts_when[point], sizeof(t->lifts_when[point]));
                t->drain = saved->drain;        /* a drain the failed set would have ended goes on */
                t->drain_since_usec = saved->drain_since_usec;
                t->drain_emptied = saved->drain_emptied;
        } else
                ledger_release(&a->ledger, t->path, t->kind, t->major, t->minor, point);
        if (!throttle_requested(t) && t->applied == t->original && !write_in_flight(a, t))
                ledger_remove(&a->ledger, t);
        (void) persist(a);
}

static const char *set_action(const ThrottleRequest *q) {
        if (q->kind == THROTTLE_IO_WBPS)
                return "cap-writes";
        if (q->kind == THROTTLE_SWAP_MAX)
                return "hold-swap";
        return q->point == POINT_WRITE ? "dirty-budget" : "throttle-allocations";
}

static const char *lift_action(ThrottleKind kind) {
        if (kind == THROTTLE_SWAP_MAX)
                return "restore-swap-max";
        return kind == THROTTLE_IO_WBPS ? "lift-cap" : "restore-memory-high";
}

static size_t stopping_index(const Actuator *a, const char *unit) {
        for (size_t i = 0; unit && i < a->n_stopping; i++)
                if (streq(a->stopping[i], unit))
                        return i;
        return SIZE_MAX;
}

/*
 * The unit of systemd's own (the system manager's) whose cgroup `path` is,
 * or NULL: its last component is a unit and every one above it a slice. A
 * unit's name below a service or a scope belongs to another manager (a
 * user's, a container's), where the same name is another unit.
 */
static const char *system_unit_of(const char *path) {
        const char *unit = cgroup_path_unit(path);

        if (!unit)
                return NULL;
        for (const char *c = path; c < unit; ) {
                const char *end;

                while (*c == '/')
                        c++;
                if (c >= unit)
                        break;
                end = strchr(c, '/');
                if (!end || end > unit || end - c < 6 || strncmp(end - 6, ".slice", 6) != 0)
                        return NULL;
                c = end;
        }
        /* systemd escapes a name that could be taken for a cgroup file (io.service: _io.service). */
        return unit[0] == '_' ? unit + 1 : unit;
}

static bool unit_stopping(const Actuator *a, const char *path) {
        return stopping_index(a, system_unit_of(path)) != SIZE_MAX;
}

/* Whether an operator's release keeps the cgroup unthrottled now; the first refusal of each release is logged. */
static bool refused(Actuator *a, const Cgroup *cg, const ThrottleRequest *q) {
        uint64_t now = now_usec(CLOCK_REALTIME);
        LedgerHold *h = ledger_held(&a->ledger, cg->path, now);

        if (!h)
                return false;
        if (!h->refusal_logged)
                log_info("%s: released by %s for %" PRIu64 "s more; the %s point's throttles wait until then",
                         cg->path, h->who, (h->until_usec - now) / USEC_PER_SEC, throttle_point_to_string(q->point));
        h->refusal_logged = true;
        return true;
}

static void drop_vanished(Actuator *a, ThrottleEntry *t, const char *unit);

int actuator_throttle_set(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, &unit, &err);
        ThrottleRequest req = *q;
        uint64_t current, before;
        ThrottleEntry *t, saved;
        bool existed;
        int r;

        if (!cg)
                return err;
        if (refused(a, cg, q) || unit_stopping(a, cg->path))
                return -ECANCELED;
        /* An empty cgroup is about to be removed (a unit that stopped): a throttle set now could
         * only outlive it, holding its last dirty pages to a crawl (not now, for the point). One
         * removed already, before the table has seen it go, has nothing left to throttle. */
        r = cgroup_populated(cg);
        if (r == 0)
                return -ECANCELED;
        if (r < 0 && cgroup_gone(cg))
                return -ENODEV;
        /* The kernel keeps memory.high in pages: a value it would round is
         * rounded here, or the next check would take it for someone else's. */
        if (q->kind == THROTTLE_MEMORY_HIGH && q->value != THROTTLE_NONE)
                req.value = q->value / a->page_size * a->page_size;
        t = ledger_find(&a->ledger, cg->path, q->kind, q->major, q->minor);
        /* Another cgroup at a path the ledger knows (a unit started again before the tick saw its old
         * cgroup go, a draining cap's the likeliest): the old record is of a cgroup that is gone. */
        if (t && t->cgroup_id != cg->id) {
                drop_vanished(a, t, unit);
                t = NULL;
        }
        if (t)
                current = t->applied;
        else {
                r = throttle_read(cg, q->kind, q->major, q->minor, &current);
                if (r < 0)
                        return r;
        }
        existed = t != NULL;
        if (t)
                saved = *t;
        r = ledger_request(&a->ledger, cg->path, cg->id, &req, current, now_usec(CLOCK_REALTIME), &t);
        if (r < 0)
                return r;
        if (q->kind == THROTTLE_IO_WBPS) {
                t->drain = q->drain;
                t->drain_since_usec = 0;        /* the cgroup writes again: the point's cap, not a drain */
                t->drain_emptied = false;
        }
        /* Against what the file will hold: a write still queued may bring another value. */
        before = value_ahead(a, t);
        if (throttle_effective(t) == before)
                return 0;
        /* No record, no write: a throttle the ledger does not hold could outlive a crash. */
        r = persist(a);
        if (r >= 0)
                r = apply(a, cg, t);
        if (r < 0) {
                undo_request(a, t, q->point, existed ? &saved : NULL);
                return r;
        }
        throttle_event(a, set_action(q), unit, t, before, throttle_effective(t), q->reason);
        if (q->kind != THROTTLE_MEMORY_HIGH)
                (void) persist(a);      /* written at once: ->applied moved */
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
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, &unit, &err);
        uint64_t before;
        int r = err == -ENODEV ? 0 : err;

        if (!t)
                return 0;
        ledger_release(&a->ledger, t->path, t->kind, t->major, t->minor, q->point);
        before = value_ahead(a, t);
        if (cg && throttle_effective(t) != before) {
                r = apply(a, cg, t);
                if (r >= 0)
                        throttle_event(a, lift_action(q->kind), unit, t, before, throttle_effective(t), q->reason);
        }
        /* Gone: nothing to put back. Not reachable now (out of fds): kept, and verify writes it later. */
        if (!throttle_requested(t) && (err == -ENODEV || (cg && t->applied == t->original && !write_in_flight(a, t))))
                ledger_remove(&a->ledger, t);
        (void) persist(a);
        return r < 0 ? r : 1;
}

/* ---- releases ---- */

/* `lifted`: how many throttles the release lifted, or -1 (its end). */
static void release_event(Actuator *a, const char *action, const char *path, const char *unit, const LedgerHold *h,
                          int lifted, const char *format, ...) __attribute__((format(printf, 7, 8)));
static void release_event(Actuator *a, const char *action, const char *path, const char *unit, const LedgerHold *h,
                          int lifted, const char *format, ...) {
        char f_who[LEDGER_WHO_MAX + 16], f_until[48], f_lifted[48], text[EVENT_TEXT_MAX];
        const char *fields[] = { f_who, f_until, lifted >= 0 ? f_lifted : NULL, NULL };
        va_list ap;

        snprintf(f_lifted, sizeof(f_lifted), "THROTTLES_LIFTED=%d", lifted);

        snprintf(f_who, sizeof(f_who), "RELEASED_BY=%s", h->who);
        snprintf(f_until, sizeof(f_until), "UNTIL_REALTIME_USEC=%" PRIu64, h->until_usec);
        va_start(ap, format);
        vsnprintf(text, sizeof(text), format, ap);
        va_end(ap);
        event_record(a->events, &(LogEvent) { .level = LOG_NOTICE, .message_id = MESSAGE_RELEASE, .cgroup = path,
                                              .unit = unit, .action = action, .fields = fields },
                     "%s", text);
}

/* Every point's request on t withdrawn at once, the original written back, the points told. */
static int lift_released(Actuator *a, ThrottleEntry *t, const char *why) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, t->cgroup_id, &unit, &err);
        uint64_t before = value_ahead(a, t);
        int r = 0;

        throttle_clear_requests(t);
        /* What a memory.high write still queued brings counts: the original goes in behind it. */
        if (cg && t->original != before) {
                r = apply(a, cg, t);
                if (r >= 0)
                        throttle_event(a, lift_action(t->kind), unit, t, before, t->original, why);
                else
                        log_warning_errno(r, "%s: cannot lift %s: %m", t->path, throttle_file(t->kind));
        }
        if (a->ops->throttle_dropped)
                a->ops->throttle_dropped(t, a->userdata);
        if (err == -ENODEV || (cg && t->applied == t->original && !write_in_flight(a, t)))
                ledger_remove(&a->ledger, t);
        return r;
}

/* Lifts every throttle on the cgroup (0: on every cgroup) of one kind (-1: any); returns how many. */
static int lift_on(Actuator *a, uint64_t cgroup_id, int kind, const char *why) {
        int n = 0;

        /* Backwards: a removal moves the last entry (already seen) into its place. */
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];

                if ((cgroup_id != 0 && t->cgroup_id != cgroup_id) || (kind >= 0 && (int) t->kind != kind))
                        continue;
                (void) lift_released(a, t, why);
                n++;
        }
        return n;
}

static int lift_all_on(Actuator *a, uint64_t cgroup_id, const char *why) {
        return lift_on(a, cgroup_id, -1, why);
}

/*
 * A writer that ended (no process left, or its unit stopping) leaves a
 * backlog: dirty pages, and bios held in blk-throttle behind its cap. Lifted
 * at once, all of it would queue on the device in front of the cgroup the cap
 * protects; held at the cap, it would crawl, and past the cgroup's removal
 * nobody could lift it. So the cap rises to the drain rate its point gave
 * (ThrottleRequest.drain, nine tenths of the device for the write point): the
 * leftovers are written nearly as fast as the device takes them, and a
 * cgroup removed meanwhile keeps that rate in the kernel, never a crawl. The
 * points are told the cap is no longer theirs, and may not set another while
 * the cgroup is empty or its unit stopping; the tick (drain_done) lifts it
 * once the leftovers are written, or after DRAIN_MAX_USEC.
 * Returns 1 when the cap began to drain, 2 when it already did, 0 when it has
 * nothing to drain (no drain rate, no cap): the caller lifts it.
 *
 * DRAIN_MAX_USEC: the kernel writes dirty pages under the background
 * threshold only once they are dirty_expire_centisecs old (30 s by default),
 * so a writer's last pages may wait that long and then go all at once; the
 * drain outlasts that by as long again.
 */
#define DRAIN_MAX_USEC (60 * USEC_PER_SEC)
#define DRAIN_DONE_BYTES (UINT64_C(1) << 20)

static int drain_cap(Actuator *a, ThrottleEntry *t, const char *why) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, t->cgroup_id, &unit, &err);
        uint64_t before = value_ahead(a, t);
        char reason[LEDGER_REASON_MAX];
        int r;

        if (t->drain_since_usec)
                return 2;
        /* Nothing to hold at a drain rate the cgroup's own value is under: lifted. */
        if (t->kind != THROTTLE_IO_WBPS || !t->drain || before == THROTTLE_NONE ||
            MAX(before, t->drain) >= t->original || !cg)
                return 0;
        throttle_clear_requests(t);
        t->requested[POINT_WRITE] = MAX(before, t->drain);
        snprintf(reason, sizeof(reason), "%s: what it left is written at the drain rate, not all at once", why);
        snprintf(t->reason[POINT_WRITE], sizeof(t->reason[POINT_WRITE]), "%s", reason);
        snprintf(t->lifts_when[POINT_WRITE], sizeof(t->lifts_when[POINT_WRITE]),
                 "what it left is written (at most %u s)", (unsigned) (DRAIN_MAX_USEC / USEC_PER_SEC));
        t->drain_since_usec = now_usec(CLOCK_MONOTONIC);
        /* Recorded before it is written, as every value of ours: a restart after a crash restores it. */
        r = persist(a);
        if (r >= 0 && throttle_effective(t) != before)
                r = apply(a, cg, t);
        if (r < 0) {
                log_warning_errno(r, "%s: cannot raise %s to drain, lifted instead: %m", t->path,
                                  throttle_file(t->kind));
                t->drain_since_usec = 0;
                return 0;       /* the caller lifts it: what is recorded does not matter then */
        }
        if (a->ops->throttle_dropped)
                a->ops->throttle_dropped(t, a->userdata);       /* the point's cap no more */
        throttle_event(a, "drain-cap", unit, t, before, throttle_effective(t), reason);
        return 1;
}

/* Whether a draining cap has done its work: its cgroup's dirty and writeback pages written, or its time up. */
static bool drain_done(Cgroup *cg, const ThrottleEntry *t, const char **why) {
        uint64_t left;
        int r;

        if (now_usec(CLOCK_MONOTONIC) - t->drain_since_usec >= DRAIN_MAX_USEC) {
                *why = "the drain's time is up";
                return true;
        }
        r = cg_dir_read_dirty(cg->dirfd, &left);
        if (r == -ENOENT) {
                *why = "its memory.stat does not tell what the cgroup left";
                return true;
        }
        if (r < 0)
                return false;   /* not now (out of fds): the next tick, or the drain's time */
        *why = "what the cgroup left is written";
        return left < DRAIN_DONE_BYTES;
}

/* Lifts the io.max caps of one cgroup (0: every one) that it can't drain, drains the others; returns how
 * many changed. */
static int drain_or_lift_caps(Actuator *a, uint64_t cgroup_id, const char *unit_name, const char *why) {
        int n = 0;

        /* Backwards: a removal moves the last entry (already seen) into its place. */
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                const char *u = unit_name ? system_unit_of(t->path) : NULL;
                int r;

                if (t->kind != THROTTLE_IO_WBPS || (cgroup_id && t->cgroup_id != cgroup_id) ||
                    (unit_name && (!u || !streq(u, unit_name))))
                        continue;
                r = drain_cap(a, t, why);
                if (r == 0)
                        (void) lift_released(a, t, why);
                /* Begun by its unit's stop: its time counts from when the writer is gone, once. */
                if (r == 2 && cgroup_id && !t->drain_emptied)
                        t->drain_since_usec = now_usec(CLOCK_MONOTONIC);
                if (r > 0 && cgroup_id)
                        t->drain_emptied = true;
                n += r != 2;
        }
        return n;
}

/*
 * No process left in the cgroup: its throttles go before the cgroup does, or
 * they would hold what it left behind once nobody can lift them. The io.max
 * cap first (written at once; raised to its drain rate where it has one),
 * then memory.high.
 */
static int lift_emptied(Actuator *a, uint64_t cgroup_id) {
        const char *why = "the cgroup has no process left";
        int n = drain_or_lift_caps(a, cgroup_id, NULL, why);

        return n + lift_on(a, cgroup_id, THROTTLE_MEMORY_HIGH, why);
}

/* Lifts the throttles of one kind on the cgroup of `unit`; returns how many. */
static int lift_unit(Actuator *a, const char *unit, ThrottleKind kind) {
        int n = 0;

        /* Backwards: a removal moves the last entry (already seen) into its place. */
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                const char *u = system_unit_of(t->path);

                if (t->kind == kind && u && streq(u, unit)) {
                        (void) lift_released(a, t, "its unit is stopping");
                        n++;
                }
        }
        return n;
}

void actuator_unit_stopping(Actuator *a, const char *unit, bool stopping) {
        size_t i = stopping_index(a, unit);
        char *copy;
        int n;

        if (!unit) {
                for (i = 0; i < a->n_stopping; i++)
                        free(a->stopping[i]);
                a->n_stopping = 0;
                return;
        }
        if (!stopping) {
                if (i == SIZE_MAX)
                        return;
                free(a->stopping[i]);
                memmove(&a->stopping[i], &a->stopping[i + 1], (a->n_stopping - i - 1) * sizeof(char *));
                a->n_stopping--;
                return;
        }
        if (i == SIZE_MAX) {
                copy = strdup(unit);
                if (!copy) {
                        log_warning("Out of memory: %s is stopping but not remembered as such", unit);
                        return;
                }
                if (a->n_stopping == ACTUATOR_STOPPING_MAX) {
                        free(a->stopping[0]);
                        memmove(&a->stopping[0], &a->stopping[1], (a->n_stopping - 1) * sizeof(char *));
                        a->n_stopping--;
                }
                a->stopping[a->n_stopping++] = copy;
        }
        /* The cap first (written at once): it is what holds the leftover dirty pages. */
        n = drain_or_lift_caps(a, 0, unit, "its unit is stopping");
        if (n + lift_unit(a, unit, THROTTLE_MEMORY_HIGH) > 0)
                (void) persist(a);
}

/* Records the release of `path`; if the ledger cannot be written, the one it replaced (if any) is back. */
static int record_release(Actuator *a, const char *path, uint64_t cgroup_id, uint64_t now, uint64_t until_usec,
                          const char *who, LedgerHold **ret) {
        LedgerHold before = {}, *h = ledger_find_hold(&a->ledger, path);
        int r;

        if (h)
                before = *h;
        r = ledger_hold(&a->ledger, path, cgroup_id, now, until_usec, who, &h);
        if (r < 0)
                return r;
        /* Recorded first: a crash from here on still finds the release at the next start. */
        r = persist(a);
        if (r >= 0)
                *ret = h;
        else if (before.path)
                *h = before;
        else
                ledger_unhold(&a->ledger, h);
        return r;
}

int actuator_release(Actuator *a, uint64_t cgroup_id, uint64_t until_usec, const char *who) {
        const char *unit = NULL, *path = LEDGER_HOLD_ALL;
        uint64_t now = now_usec(CLOCK_REALTIME);
        LedgerHold *h;
        char why[LEDGER_WHO_MAX + 32];
        int r, n;

        if (cgroup_id != 0) {
                Cgroup *cg = lookup(a, cgroup_id, &unit);

                if (!cg)
                        return -ENODEV;
                path = cg->path;
        }
        r = record_release(a, path, cgroup_id, now, until_usec, who, &h);
        if (r < 0)
                return r;
        snprintf(why, sizeof(why), "released by %s", who);
        n = lift_all_on(a, cgroup_id, why);
        release_event(a, "release", cgroup_id ? path : NULL, unit, h, n,
                      "%s: released by %s for %" PRIu64 "s: %d throttle%s lifted, none set until then",
                      cgroup_id ? path : "every cgroup", who, u64_delta(until_usec, now) / USEC_PER_SEC, n,
                      n == 1 ? "" : "s");
        (void) persist(a);
        return n;
}

const LedgerHold *actuator_released(const Actuator *a, const char *path) {
        return ledger_held(&a->ledger, path, now_usec(CLOCK_REALTIME));
}

/* Releases whose time is up are dropped; each is said with an event. Returns whether any was. */
static bool end_releases(Actuator *a, bool quiet) {
        uint64_t now = now_usec(CLOCK_REALTIME);
        bool changed = false;

        for (size_t i = a->ledger.n_holds; i > 0; i--) {
                LedgerHold *h = &a->ledger.holds[i - 1];
                bool all = streq(h->path, LEDGER_HOLD_ALL);

                if (h->until_usec > now)
                        continue;
                if (!quiet)
                        release_event(a, "release-ended", all ? NULL : h->path, all ? NULL : cgroup_path_unit(h->path), h, -1,
                                      "%s: the release by %s ended; the points may throttle it again",
                                      all ? "every cgroup" : h->path, h->who);
                ledger_unhold(&a->ledger, h);
                changed = true;
        }
        return changed;
}

/* Whether `value` is what a write of ours on its way (or abandoned at stop) puts in t's file: its
 * value, or for memory.high one of the steps it takes down to it (worker.c). */
static bool pending_value(const Actuator *a, const ThrottleEntry *t, uint64_t value) {
        for (size_t i = 0; i < a->n_pending; i++) {
                const PendingJob *p = &a->pending[i];

                if (same_throttle(p, t) && (p->value == value || (t->kind == THROTTLE_MEMORY_HIGH &&
                                                                  p->value < value && value < p->from)))
                        return true;
        }
        return false;
}

/*
 * memory.high is lowered in steps (worker.c): a run that ended between two by
 * a crash left a value between the one asked for and the original, which no
 * pending write of this run accounts for. Ours too (someone else's value in
 * that range would be taken for ours and the original put back).
 */
static bool high_step_value(const ThrottleEntry *t, uint64_t value) {
        return t->kind == THROTTLE_MEMORY_HIGH && throttle_effective(t) < value && value < t->original;
}

/*
 * Puts the original back if the file still holds what we (or a write of ours
 * that did not reach the ledger) set. Returns 1 if restored, 0 if the value is
 * someone else's or the cgroup is gone, a negative errno if the file could not
 * be read (out of fds) or written.
 */
static int restore_if_ours(Actuator *a, const ThrottleEntry *t, const char *action, const char *reason) {
        const char *unit;
        Cgroup *cg = lookup(a, t->cgroup_id, &unit);
        uint64_t current;
        char buf[64];
        int r;

        if (!cg || !streq(cg->path, t->path))
                return 0;
        r = throttle_read(cg, t->kind, t->major, t->minor, &current);
        if (r == -ENOENT || r == -ENODEV)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "%s: cannot read %s to restore it: %m", t->path, throttle_file(t->kind));
        if (current != t->applied && current != throttle_effective(t) && !pending_value(a, t, current) &&
            !high_step_value(t, current))
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
        /* Releases still running stay (the points wait for them); ended ones go without a word. */
        (void) end_releases(a, true);
        for (size_t i = 0; i < a->ledger.n_holds; i++)
                log_info("%s: released by %s for %" PRIu64 "s more; no throttle until then", a->ledger.holds[i].path,
                         a->ledger.holds[i].who,
                         u64_delta(a->ledger.holds[i].until_usec, now_usec(CLOCK_REALTIME)) / USEC_PER_SEC);
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                int err;
                Cgroup *cg = lookup_why(a, t->cgroup_id, NULL, &err);

                if (!cg && err != -ENODEV) {
                        /* Kept, its requests (the last run's) withdrawn: the first check that can open
                         * it writes its original back. */
                        log_warning_errno(err, "%s: cannot look at it now: %m; its throttle record is kept", t->path);
                        throttle_clear_requests(t);
                        continue;
                }
                if (!cg || !streq(cg->path, t->path))
                        log_info("%s: gone since the last run; its throttle record is dropped", t->path);
                else {
                        int k = restore_if_ours(a, t, "restore-after-restart", "left by a previous run");

                        if (k < 0) {
                                throttle_clear_requests(t);     /* kept, as above; said by restore_if_ours() */
                                continue;
                        }
                        if (k == 0)
                                log_info("%s: %s was changed by someone else since the last run; theirs stays",
                                         t->path, throttle_file(t->kind));
                }
                ledger_remove(&a->ledger, t);
        }
        (void) persist(a);
        return 0;
}

/*
 * Our value is in place, but not the one asked for now (a lift whose write
 * failed or could not be made, a queue that was full): written again. Returns
 * true if the ledger changed.
 */
static bool catch_up(Actuator *a, Cgroup *cg, ThrottleEntry *t) {
        /* Held at the usage while a swap disk is congested: asked again once it is not. */
        if (t->swap_deferred && worker_swap_congested())
                return false;
        t->swap_deferred = false;
        if (throttle_effective(t) != t->applied && apply(a, cg, t) < 0)
                return false;
        if (throttle_requested(t) || t->applied != t->original || write_in_flight(a, t))
                return false;
        ledger_remove(&a->ledger, t);
        return true;
}

static void drop_entry(Actuator *a, ThrottleEntry *t) {
        if (a->ops->throttle_dropped)
                a->ops->throttle_dropped(t, a->userdata);
        ledger_remove(&a->ledger, t);
}

/* The cgroup went away with the throttle on it: nothing to put back; the record goes, and says so. */
static void drop_vanished(Actuator *a, ThrottleEntry *t, const char *unit) {
        char f_knob[64], f_dev[48], f_value[48], what[48], v[24];
        const char *fields[] = { f_knob, f_dev, f_value, "OBSERVE=no", NULL };

        format_value(t->applied, v, sizeof(v));
        snprintf(f_knob, sizeof(f_knob), "KNOB=%s", throttle_knob(t->kind));
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, t->major, t->minor);
        snprintf(f_value, sizeof(f_value), "VALUE=%s", v);
        /* A draining cap's usual end (a stopped unit's cgroup removed): the kernel writes the rest at it. */
        event_record(a->events, &(LogEvent) { .level = t->drain_since_usec ? LOG_INFO : LOG_WARNING,
                                              .message_id = MESSAGE_THROTTLE, .cgroup = t->path, .unit = unit,
                                              .action = "cgroup-gone", .fields = fields },
                     "%s: the cgroup is gone with %s at %s%s; its throttle record is dropped", t->path,
                     throttle_describe(t, what, sizeof(what)), v,
                     t->drain_since_usec ? ", its drain rate: the kernel writes what is left at it" : "");
        drop_entry(a, t);
}

/* ---- watching cgroup.events of the throttled cgroups ---- */

static EventsWatch *watch_of_wd(Actuator *a, int wd) {
        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i].wd == wd)
                        return &a->watches[i];
        return NULL;
}

static bool ledger_holds(const Actuator *a, uint64_t cgroup_id) {
        for (size_t i = 0; i < a->ledger.n; i++)
                if (a->ledger.entries[i].cgroup_id == cgroup_id)
                        return true;
        return false;
}

static void watch_add(Actuator *a, uint64_t cgroup_id) {
        Cgroup *cg = lookup(a, cgroup_id, NULL);
        EventsWatch *w;
        int wd;

        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i].cgroup_id == cgroup_id)
                        return;
        if (!cg || a->n_watches >= LEDGER_MAX)
                return;
        wd = cgroup_watch_events(cg, a->inotify_fd);
        if (wd < 0) {
                /* The tick's check stands in for it. */
                log_debug_errno(wd, "%s: cannot watch cgroup.events: %m", cg->path);
                return;
        }
        w = realloc(a->watches, (a->n_watches + 1) * sizeof(EventsWatch));
        if (!w) {
                (void) inotify_rm_watch(a->inotify_fd, wd);
                return;
        }
        a->watches = w;
        a->watches[a->n_watches++] = (EventsWatch) { .cgroup_id = cgroup_id, .wd = wd };
}

/* One watch per cgroup the ledger holds a throttle on, and none besides. */
static void watches_sync(Actuator *a) {
        if (a->inotify_fd < 0)
                return;
        for (size_t i = a->n_watches; i > 0; i--) {
                EventsWatch *w = &a->watches[i - 1];

                if (ledger_holds(a, w->cgroup_id))
                        continue;
                (void) inotify_rm_watch(a->inotify_fd, w->wd);
                *w = a->watches[--a->n_watches];
        }
        for (size_t i = 0; i < a->ledger.n; i++)
                watch_add(a, a->ledger.entries[i].cgroup_id);
}

/* cgroup.events of a throttled cgroup changed, or the cgroup went: lifted or dropped at once. */
static bool on_cgroup_event(Actuator *a, uint64_t cgroup_id, bool removed) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, &unit, &err);
        bool changed = false;

        if (err == -ENODEV || (cg && cgroup_gone(cg))) {
                for (size_t i = a->ledger.n; i > 0; i--)
                        if (a->ledger.entries[i - 1].cgroup_id == cgroup_id) {
                                drop_vanished(a, &a->ledger.entries[i - 1], unit);
                                changed = true;
                        }
                return changed;
        }
        /* A removal that was not the cgroup's (a fixture's file replaced): watched again by the sync. */
        if (removed || !cg || cgroup_populated(cg) != 0)
                return false;
        return lift_emptied(a, cgroup_id) > 0;
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Actuator *a = userdata;
        union {
                struct inotify_event ev;
                char buf[4096];
        } u;
        bool changed = false;

        for (;;) {
                ssize_t n = read(fd, u.buf, sizeof(u.buf));

                if (n <= 0)
                        break;
                for (char *p = u.buf; p < u.buf + n; ) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        EventsWatch *w = watch_of_wd(a, ev->wd);

                        p += sizeof(struct inotify_event) + ev->len;
                        if (!w)
                                continue;
                        uint64_t id = w->cgroup_id;
                        if (ev->mask & IN_IGNORED)
                                *w = a->watches[--a->n_watches];        /* the kernel dropped it */
                        changed |= on_cgroup_event(a, id, ev->mask & IN_IGNORED);
                }
        }
        if (changed)
                (void) persist(a);
        else
                watches_sync(a);
        return 0;
}

static int watches_init(Actuator *a, sd_event *event) {
        int r;

        a->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (a->inotify_fd < 0)
                return negative_errno();
        r = sd_event_add_io(event, &a->inotify_source, a->inotify_fd, EPOLLIN, on_inotify, a);
        if (r < 0)
                return r;
        /* First of all sources: an emptied cgroup's cap must be lifted before systemd, woken by
         * the same change, removes the cgroup with it (then nobody can lift it). */
        r = sd_event_source_set_priority(a->inotify_source, SD_EVENT_PRIORITY_IMPORTANT - 10);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(a->inotify_source, "cgroup-events");
        return 0;
}

/* Notes a cgroup found empty, once; a full list waits for the next check. */
static void note_emptied(uint64_t *ids, size_t *n, size_t max, uint64_t id) {
        for (size_t i = 0; i < *n; i++)
                if (ids[i] == id)
                        return;
        if (*n < max)
                ids[(*n)++] = id;
}

void actuator_verify(Actuator *a) {
        bool changed = end_releases(a, false);
        uint64_t emptied[16];
        size_t n_emptied = 0;

        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                const char *unit;
                int err;
                Cgroup *cg = lookup_why(a, t->cgroup_id, &unit, &err);
                uint64_t current, before = t->applied;

                if (write_in_flight(a, t))
                        continue;
                /* No process left (the watch of cgroup.events missed it, or could not be set); a
                 * draining cap is the emptied cgroup's already. */
                if (!t->drain_since_usec && cg && cgroup_populated(cg) == 0) {
                        note_emptied(emptied, &n_emptied, ELEMENTSOF(emptied), t->cgroup_id);
                        continue;
                }
                if (cg)
                        err = throttle_read(cg, t->kind, t->major, t->minor, &current);
                if (err == -ENODEV || (cg && err == -ENOENT)) {
                        drop_vanished(a, t, unit);
                        changed = true;
                        continue;
                }
                if (err < 0)
                        continue;       /* not now (out of fds): the next check */
                if (!ledger_adopt_foreign(t, current)) {
                        const char *why;

                        /* An ended writer's cap, draining what it left: lifted once that is written. */
                        if (!t->drain_since_usec)
                                changed |= catch_up(a, cg, t);
                        else if (drain_done(cg, t, &why)) {
                                (void) lift_released(a, t, why);
                                changed = true;
                        }
                        continue;
                }
                throttle_event(a, "foreign-change", unit, t, before, current,
                               "changed by someone else: theirs wins and becomes the original");
                drop_entry(a, t);
                changed = true;
        }
        for (size_t i = 0; i < n_emptied; i++)
                changed |= lift_emptied(a, emptied[i]) > 0;
        if (changed)
                (void) persist(a);
}

void actuator_stop_jobs(Actuator *a) {
        worker_stop(a->worker);
}

void actuator_restore_all(Actuator *a) {
        /* No write of ours may land after its entry is restored: the worker stops first (a queued
         * write is dropped, one inside the kernel interrupted or abandoned); what such a write put
         * in a file counts as ours below. */
        a->worker = worker_free(a->worker);
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                int err;

                /* A cgroup that cannot be opened now (out of fds) is not gone, and a write that failed
                 * restored nothing: the record stays in the ledger, and the next start puts the
                 * original back (actuator_recover()). */
                if (!lookup_why(a, t->cgroup_id, NULL, &err) && err != -ENODEV) {
                        log_warning_errno(err, "%s: cannot look at it to restore %s: %m; its record is kept for "
                                          "the next start", t->path, throttle_file(t->kind));
                        continue;
                }
                if (restore_if_ours(a, t, "restore-on-stop", "daemon stopping") < 0)
                        continue;
                ledger_remove(&a->ledger, t);
        }
        (void) persist(a);
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
                format_value(p->value, want, sizeof(want));
                snprintf(reason, sizeof(reason), "about its usage, not %s, while a swap disk is congested: "
                         "its tasks reclaim as they allocate", want);
                throttle_event(a, "defer-for-swap", unit, t, before, t->applied, reason);
                if (wrote)
                        (void) persist(a);
                return;
        } else if (job->result != -ECANCELED && !p->superseded_usec) {
                t->applied = p->value;
                t->swap_deferred = false;
        }
        /* Something else was asked while the write was on its way (a lift, another value): catch up. */
        if (throttle_effective(t) != t->applied && !write_in_flight(a, t))
                (void) apply(a, cg, t);
        if (!throttle_requested(t) && t->applied == t->original && !write_in_flight(a, t))
                ledger_remove(&a->ledger, t);
        (void) persist(a);
}

static void on_job_done(const Job *job, void *userdata) {
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

int actuator_new(const ActuatorArgs *args, Actuator **ret) {
        _cleanup_(actuator_freep) Actuator *a = calloc(1, sizeof(Actuator));
        int r;

        if (!a)
                return -ENOMEM;
        a->page_size = args->page_size ?: 4096;
        /* 4 MiB, and the kernel's charge batch (64 pages) per CPU. */
        a->high_headroom = (UINT64_C(4) << 20) + (uint64_t) MAX(sysconf(_SC_NPROCESSORS_CONF), 1L) * 64 * a->page_size;
        a->events = args->events;
        a->ops = args->ops;
        a->userdata = args->userdata;
        a->inotify_fd = -1;
        ledger_init(&a->ledger, args->ledger_file);
        r = watches_init(a, args->event);
        if (r < 0)
                return log_error_errno(r, "Cannot watch cgroup.events: %m");
        r = worker_new(args->event, "worker", args->proc_root ?: "/proc", true, on_job_done, a, &a->worker);
        if (r < 0)
                return log_error_errno(r, "Cannot start the worker thread: %m");
        *ret = TAKE_PTR(a);
        return 0;
}

Actuator *actuator_free(Actuator *a) {
        if (!a)
                return NULL;
        worker_free(a->worker);
        sd_event_source_disable_unref(a->inotify_source);
        closep(&a->inotify_fd);
        free(a->watches);
        ledger_clear(&a->ledger);
        for (size_t i = 0; i < a->n_stopping; i++)
                free(a->stopping[i]);
        free(a);
        return NULL;
}

const Ledger *actuator_ledger(const Actuator *a) {
        return &a->ledger;
}

size_t actuator_jobs_pending(const Actuator *a) {
        return a->n_pending;
}

Worker *actuator_worker(Actuator *a) {
        return a->worker;
}
