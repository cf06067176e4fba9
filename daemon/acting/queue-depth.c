/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "queue-depth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blkqueue.h"
#include "log.h"
#include "message-ids.h"
#include "util.h"
#include "worker.h"

#define QUEUE_REFUSED_MAX 64

/* An nr_requests write in the worker, remembered until it reports back. */
typedef struct QueueJob {
        uint64_t cookie;
        uint32_t major, minor;          /* the disk's */
        uint64_t value;
} QueueJob;

/* A knob the kernel refused on a device: said once, not asked for again. */
typedef struct QueueRefusal {
        uint32_t major, minor;
        ThrottleKind kind;
} QueueRefusal;

struct QueueDepth {
        Ledger ledger;
        int sys_fd;
        Worker *worker;
        QueueJob pending[WORKER_QUEUE_MAX];
        size_t n_pending;
        uint64_t next_cookie;
        QueueRefusal refused[QUEUE_REFUSED_MAX];
        size_t n_refused;
        bool read_only_said;            /* EROFS: /sys read-only to the daemon, said once for every device */
        EventLog *events;
        void (*changed)(void *userdata);
        void *userdata;
};

static QueueKnob knob_of(ThrottleKind k) {
        return k == THROTTLE_NR_REQUESTS ? QUEUE_NR_REQUESTS : QUEUE_MAX_SECTORS_KB;
}

/* The device is no more: its sysfs directory, or the knob's file, went with it. Anything else (out of fds, no
 * access, a read or write the kernel refused) leaves the device in place, and its knob as it was. */
static bool device_gone(int r) {
        return r == -ENOENT || r == -ENODEV;
}

static ThrottleEntry *entry_find(QueueDepth *q, ThrottleKind kind, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < q->ledger.n; i++) {
                ThrottleEntry *e = &q->ledger.entries[i];

                if (e->kind == kind && e->major == major && e->minor == minor)
                        return e;
        }
        return NULL;
}

static bool is_refused(const QueueDepth *q, ThrottleKind kind, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < q->n_refused; i++)
                if (q->refused[i].kind == kind && q->refused[i].major == major && q->refused[i].minor == minor)
                        return true;
        return false;
}

/* /sys mounted read-only for the daemon (its unit's ProtectKernelTunables=yes with no drop-in that opens
 * /sys/devices): one cause for every device and knob, said once. */
static void refuse_read_only(QueueDepth *q, const ThrottleEntry *e) {
        const char *fields[] = { "KNOB=queue", "ERRNO=30", NULL };

        if (q->read_only_said)
                return;
        q->read_only_said = true;
        event_record(q->events, &(LogEvent) { .level = LOG_WARNING, .message_id = MESSAGE_THROTTLE,
                                              .action = "queue-refused", .fields = fields },
                     "%s: read-only to the daemon: its unit's ProtectKernelTunables=yes keeps /sys read-only; "
                     "ManageQueueDepth= leaves every queue alone until a restart with the drop-in queue-depth.conf "
                     "(docs/packaging.md); the rest goes on", e->path);
}

/* The kernel refused `value`: said once per device and knob, which is then left alone there. */
static void refuse(QueueDepth *q, const ThrottleEntry *e, uint64_t value, int error) {
        char f_knob[48], f_dev[48], f_value[48], f_errno[32];
        const char *fields[] = { f_knob, f_dev, f_value, f_errno, NULL };
        const char *knob = throttle_kind_to_string(e->kind);

        if (is_refused(q, e->kind, e->major, e->minor))
                return;
        if (q->n_refused < QUEUE_REFUSED_MAX)
                q->refused[q->n_refused++] = (QueueRefusal) { e->major, e->minor, e->kind };
        if (error == -EROFS) {
                refuse_read_only(q, e);
                return;
        }
        snprintf(f_knob, sizeof(f_knob), "KNOB=%s", knob);
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, e->major, e->minor);
        snprintf(f_value, sizeof(f_value), "VALUE=%" PRIu64, value);
        snprintf(f_errno, sizeof(f_errno), "ERRNO=%d", -error);
        event_record(q->events, &(LogEvent) { .level = LOG_WARNING, .message_id = MESSAGE_THROTTLE,
                                              .action = "queue-refused", .fields = fields },
                     "%s/%s: the kernel refuses %" PRIu64 ": %s%s; ManageQueueDepth= leaves %s alone on this "
                     "device until the daemon restarts, everything else goes on", e->path, knob, value, strerror(-error),
                     error == -EINVAL ? " (a value its scheduler or driver does not take)" : "", knob);
}

static bool write_in_flight(const QueueDepth *q, const ThrottleEntry *e) {
        for (size_t i = 0; i < q->n_pending; i++)
                if (e->kind == THROTTLE_NR_REQUESTS && q->pending[i].major == e->major &&
                    q->pending[i].minor == e->minor)
                        return true;
        return false;
}

/* What the knob holds once the writes queued for it are done. */
static uint64_t value_ahead(const QueueDepth *q, const ThrottleEntry *e) {
        uint64_t v = e->applied, cookie = 0;

        for (size_t i = 0; e->kind == THROTTLE_NR_REQUESTS && i < q->n_pending; i++)
                if (q->pending[i].major == e->major && q->pending[i].minor == e->minor &&
                    q->pending[i].cookie > cookie) {
                        cookie = q->pending[i].cookie;
                        v = q->pending[i].value;
                }
        return v;
}

static bool pending_value(const QueueDepth *q, const ThrottleEntry *e, uint64_t value) {
        for (size_t i = 0; e->kind == THROTTLE_NR_REQUESTS && i < q->n_pending; i++)
                if (q->pending[i].major == e->major && q->pending[i].minor == e->minor &&
                    q->pending[i].value == value)
                        return true;
        return false;
}

static int persist(QueueDepth *q) {
        int r = ledger_save(&q->ledger);

        if (r < 0)
                log_warning_errno(r, "Cannot write the device queue ledger %s: %m", strna(q->ledger.file));
        if (q->changed)
                q->changed(q->userdata);
        return r;
}

static void queue_event(QueueDepth *q, const char *action, const ThrottleEntry *e, uint64_t before, uint64_t after,
                        const char *reason) {
        char f_knob[48], f_dev[48], f_before[48], f_after[48], f_reason[200];
        const char *fields[] = { f_knob, f_dev, f_before, f_after, f_reason, "OBSERVE=no", NULL };

        snprintf(f_knob, sizeof(f_knob), "KNOB=%s", throttle_kind_to_string(e->kind));
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, e->major, e->minor);
        snprintf(f_before, sizeof(f_before), "BEFORE=%" PRIu64, before);
        snprintf(f_after, sizeof(f_after), "AFTER=%" PRIu64, after);
        snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
        event_record(q->events, &(LogEvent) { .level = LOG_NOTICE, .message_id = MESSAGE_THROTTLE,
                                              .action = action, .fields = fields },
                     "%s/%s: %" PRIu64 " -> %" PRIu64 " (%s)", e->path, throttle_kind_to_string(e->kind), before,
                     after, reason);
}

/* What the knob holds now, read back: the kernel may round a value (nr_requests is at least 4). */
static uint64_t read_back(QueueDepth *q, const ThrottleEntry *e, uint64_t written) {
        BlkQueue bq;
        uint64_t v;

        if (blkqueue_open(q->sys_fd, e->major, e->minor, &bq) < 0)
                return written;
        if (blkqueue_read(bq.fd, knob_of(e->kind), &v) < 0)
                v = written;
        blkqueue_close(&bq);
        return v;
}

/*
 * Writes the entry's effective value: max_sectors_kb at once (the kernel
 * takes it without waiting), nr_requests through the worker (the kernel
 * drains the queue first). 1: written; 0: on its way; a negative errno.
 */
static int apply(QueueDepth *q, int queue_fd, ThrottleEntry *e) {
        uint64_t v = throttle_effective(e);
        Job job = { .kind = JOB_FILE_WRITE };
        int r;

        if (e->kind == THROTTLE_MAX_SECTORS_KB) {
                r = blkqueue_write(queue_fd, QUEUE_MAX_SECTORS_KB, v);
                if (r < 0)
                        return r;
                e->applied = read_back(q, e, v);
                return 1;
        }
        if (!q->worker)
                return -ESHUTDOWN;
        if (q->n_pending >= WORKER_QUEUE_MAX)
                return -EBUSY;
        snprintf(job.file, sizeof(job.file), "%s", queue_knob_file(QUEUE_NR_REQUESTS));
        snprintf(job.data, sizeof(job.data), "%" PRIu64, v);
        snprintf(job.path, sizeof(job.path), "%s", e->path);
        job.cookie = ++q->next_cookie;
        r = worker_submit(q->worker, &job, queue_fd);
        if (r < 0)
                return r;
        q->pending[q->n_pending++] = (QueueJob) { .cookie = job.cookie, .major = e->major, .minor = e->minor,
                                                  .value = v };
        return 0;
}

/* Done with the entry once nothing asks for it, its original is back and no write is on its way. */
static bool settled(const QueueDepth *q, const ThrottleEntry *e) {
        return !throttle_requested(e) && e->applied == e->original && !write_in_flight(q, e);
}

/* The write point's request on one knob of an open queue. */
static int set_knob(QueueDepth *q, const BlkQueue *bq, ThrottleKind kind, uint64_t value, const QueueRequest *req) {
        ThrottleEntry *e = entry_find(q, kind, bq->major, bq->minor);
        ThrottleRequest tr = { .kind = kind, .major = bq->major, .minor = bq->minor, .point = POINT_WRITE,
                               .value = value, .reason = req->reason, .lifts_when = req->lifts_when };
        uint64_t current, before;
        char path[64];
        int r;

        if (is_refused(q, kind, bq->major, bq->minor) || (e && e->requested[POINT_WRITE] == value))
                return 0;
        if (e)
                current = e->applied;
        else {
                r = blkqueue_read(bq->fd, knob_of(kind), &current);
                if (r < 0)
                        return log_debug_errno(r, "/sys/block/%s/queue/%s cannot be read: %m", bq->name,
                                               throttle_kind_to_string(kind));
                if (current <= value)
                        return 0;       /* as shallow already: nothing to record */
        }
        snprintf(path, sizeof(path), "/sys/block/%s/queue", bq->name);
        r = ledger_request(&q->ledger, path, 0, &tr, current, now_usec(CLOCK_REALTIME), &e);
        if (r < 0)
                return r;
        before = value_ahead(q, e);
        if (throttle_effective(e) == before)
                return 0;
        /* No record, no write: a value the ledger does not hold could outlive a crash. */
        r = persist(q);
        if (r >= 0) {
                r = apply(q, bq->fd, e);
                /* Not now (a full queue, no memory, stopping), or the kernel's refusal: said once. */
                if (r < 0 && r != -ENOMEM && r != -EBUSY && r != -ESHUTDOWN) {
                        refuse(q, e, value, r);
                        r = 0;
                }
        }
        if (r < 0 || is_refused(q, kind, bq->major, bq->minor)) {
                ledger_release(&q->ledger, e->path, e->kind, e->major, e->minor, POINT_WRITE);
                if (settled(q, e))
                        ledger_remove(&q->ledger, e);
                (void) persist(q);
                return r;
        }
        if (r > 0)
                queue_event(q, "shallow-queue", e, before, e->applied, req->reason);
        return 0;
}

int queue_depth_set(QueueDepth *q, const QueueRequest *req) {
        BlkQueue bq;
        int r;

        r = blkqueue_open(q->sys_fd, req->major, req->minor, &bq);
        if (r == -ENOENT || r == -ENOTDIR) {
                /* A device without a request queue of its own in sysfs: said once, left alone. */
                if (!is_refused(q, _THROTTLE_KIND_MAX, req->major, req->minor) && q->n_refused < QUEUE_REFUSED_MAX) {
                        q->refused[q->n_refused++] = (QueueRefusal) { req->major, req->minor, _THROTTLE_KIND_MAX };
                        log_info("Device %" PRIu32 ":%" PRIu32 " has no request queue in sysfs; ManageQueueDepth= "
                                 "leaves it alone", req->major, req->minor);
                }
                return 0;
        }
        if (r < 0)
                return r;
        /* max_sectors_kb first: it takes effect at once, while a new depth waits for the queue to drain. */
        r = set_knob(q, &bq, THROTTLE_MAX_SECTORS_KB, req->max_sectors_kb, req);
        if (r >= 0)
                r = set_knob(q, &bq, THROTTLE_NR_REQUESTS, req->nr_requests, req);
        blkqueue_close(&bq);
        return r;
}

/* Every knob of the device (its disk's numbers) back to its original; returns how many were held. */
static int lift_device(QueueDepth *q, uint32_t major, uint32_t minor, int queue_fd, const char *reason) {
        int n = 0;

        /* Backwards: a removal moves the last entry (already seen) into its place. */
        for (size_t i = q->ledger.n; i > 0; i--) {
                ThrottleEntry *e = &q->ledger.entries[i - 1];
                uint64_t before = value_ahead(q, e);
                int r = 0;

                if (e->major != major || e->minor != minor)
                        continue;
                n += throttle_requested(e);
                throttle_clear_requests(e);
                if (queue_fd >= 0 && throttle_effective(e) != before) {
                        r = apply(q, queue_fd, e);
                        if (r < 0)
                                log_warning_errno(r, "%s/%s: cannot put %" PRIu64 " back: %m; tried again at the "
                                                  "next check", e->path, throttle_kind_to_string(e->kind),
                                                  e->original);
                        else if (r > 0)
                                queue_event(q, "restore-queue", e, before, e->applied, reason);
                }
                /* The device is gone: nothing to put back. */
                if (queue_fd < 0 || settled(q, e))
                        ledger_remove(&q->ledger, e);
        }
        return n;
}

int queue_depth_lift(QueueDepth *q, uint32_t major, uint32_t minor, const char *reason) {
        BlkQueue bq = { .fd = -1, .major = major, .minor = minor };
        int r = blkqueue_open(q->sys_fd, major, minor, &bq), n;

        if (r < 0 && r != -ENOENT && r != -ENODEV)
                return r;       /* not now (out of fds): the request stays, and the next lift tries again */
        n = lift_device(q, bq.major, bq.minor, bq.fd, reason);
        blkqueue_close(&bq);
        (void) persist(q);
        return n > 0;
}

/* An nr_requests write came back. */
static void on_job_done(const Job *job, void *userdata) {
        QueueDepth *q = userdata;
        QueueJob p = {};
        ThrottleEntry *e;

        for (size_t i = 0; i < q->n_pending; i++)
                if (q->pending[i].cookie == job->cookie) {
                        p = q->pending[i];
                        q->pending[i] = q->pending[--q->n_pending];
                        break;
                }
        e = p.cookie ? entry_find(q, THROTTLE_NR_REQUESTS, p.major, p.minor) : NULL;
        if (!e)
                return;
        if (job->result < 0) {
                refuse(q, e, p.value, job->result);
                throttle_clear_requests(e);
                /* Not even the original taken back: nothing more the daemon can do for it. */
                if (p.value == e->original || settled(q, e))
                        ledger_remove(&q->ledger, e);
                (void) persist(q);
                return;
        }
        uint64_t before = e->applied;
        e->applied = read_back(q, e, p.value);
        if (!write_in_flight(q, e))
                queue_event(q, throttle_requested(e) ? "shallow-queue" : "restore-queue", e, before, e->applied,
                            throttle_requested(e) ? e->reason[POINT_WRITE] : "no protected cgroup active there");
        /* Something else was asked while the write was on its way: catch up. */
        if (!write_in_flight(q, e) && throttle_effective(e) != e->applied) {
                BlkQueue bq;

                if (blkqueue_open(q->sys_fd, e->major, e->minor, &bq) >= 0) {
                        (void) apply(q, bq.fd, e);
                        blkqueue_close(&bq);
                }
        } else if (settled(q, e))
                ledger_remove(&q->ledger, e);
        (void) persist(q);
}

/* One entry at the tick's check; returns whether the ledger changed. */
static bool verify_entry(QueueDepth *q, ThrottleEntry *e) {
        BlkQueue bq;
        uint64_t current, before = e->applied;
        int r;

        if (write_in_flight(q, e))
                return false;
        r = blkqueue_open(q->sys_fd, e->major, e->minor, &bq);
        if (device_gone(r)) {
                log_info("%s: the device is gone; its queue record is dropped", e->path);
                ledger_remove(&q->ledger, e);
                return true;
        }
        if (r < 0)
                return false;   /* not now: the next check */
        r = blkqueue_read(bq.fd, knob_of(e->kind), &current);
        if (r >= 0 && current != e->applied) {
                queue_event(q, "foreign-change", e, before, current,
                            "changed by someone else: theirs wins and becomes the original");
                ledger_remove(&q->ledger, e);
                blkqueue_close(&bq);
                return true;
        }
        /* Our value is in place but not the one asked for now (a lift whose write failed): again. */
        if (r >= 0 && throttle_effective(e) != e->applied && apply(q, bq.fd, e) > 0)
                queue_event(q, throttle_requested(e) ? "shallow-queue" : "restore-queue", e, before, e->applied,
                            "caught up at the tick's check");
        blkqueue_close(&bq);
        if (!settled(q, e))
                return false;
        ledger_remove(&q->ledger, e);
        return true;
}

void queue_depth_verify(QueueDepth *q) {
        bool changed = false;

        for (size_t i = q->ledger.n; i > 0; i--)
                changed |= verify_entry(q, &q->ledger.entries[i - 1]);
        if (changed)
                (void) persist(q);
}

/* The original could not be put back: said once, with its cause; the record stays for the next try. */
static int restore_failed(const ThrottleEntry *e, const char *step, int error) {
        return log_warning_errno(error, "%s/%s: %" PRIu64 " not put back (%s: %m); its record is kept", e->path,
                                 throttle_kind_to_string(e->kind), e->original, step);
}

/*
 * The original back if the knob still holds what we set (or what a write of
 * ours on its way, or abandoned at stop, sets). 1: restored; 0: someone
 * else's value, or the device is gone; a negative errno, said here, when the
 * queue could not be opened, read or written: the record is to be kept.
 */
static int restore_if_ours(QueueDepth *q, const ThrottleEntry *e, const char *action, const char *reason) {
        BlkQueue bq;
        uint64_t current;
        int r;

        r = blkqueue_open(q->sys_fd, e->major, e->minor, &bq);
        if (r < 0)
                return device_gone(r) ? 0 : restore_failed(e, "opening its queue", r);
        r = blkqueue_read(bq.fd, knob_of(e->kind), &current);
        if (r < 0 || (current != e->applied && current != throttle_effective(e) && !pending_value(q, e, current))) {
                blkqueue_close(&bq);
                return r < 0 && !device_gone(r) ? restore_failed(e, "reading it", r) : 0;
        }
        r = current == e->original ? 0 : blkqueue_write(bq.fd, knob_of(e->kind), e->original);
        blkqueue_close(&bq);
        if (r < 0)
                return device_gone(r) ? 0 : restore_failed(e, "writing it", r);
        if (current != e->original)
                queue_event(q, action, e, current, e->original, reason);
        return 1;
}

void queue_depth_stop_jobs(QueueDepth *q) {
        worker_stop(q->worker);
}

void queue_depth_restore_all(QueueDepth *q) {
        /* No write of ours may land after its knob is restored: the worker stops first. A depth
         * being written now is waited for by the kernel (it holds the queue's sysfs lock). */
        q->worker = worker_free(q->worker);
        for (size_t i = q->ledger.n; i > 0; i--) {
                ThrottleEntry *e = &q->ledger.entries[i - 1];

                /* Not put back now (its queue could not be opened, read or written): the record stays in the
                 * ledger file, and the next start tries again. */
                if (restore_if_ours(q, e, "restore-on-stop", "daemon stopping") < 0)
                        continue;
                ledger_remove(&q->ledger, e);
        }
        q->n_pending = 0;
        (void) persist(q);
}

int queue_depth_recover(QueueDepth *q) {
        unsigned bad_line;
        int r = ledger_load(&q->ledger, &bad_line);

        if (r < 0)
                return log_warning_errno(r, "Cannot read the device queue ledger %s: %m", strna(q->ledger.file));
        if (bad_line)
                log_warning("%s:%u: unreadable ledger line skipped", q->ledger.file, bad_line);
        /* Only a device queue's knobs belong here; a release line has no meaning for them. */
        while (q->ledger.n_holds > 0)
                ledger_unhold(&q->ledger, &q->ledger.holds[0]);
        for (size_t i = q->ledger.n; i > 0; i--) {
                ThrottleEntry *e = &q->ledger.entries[i - 1];
                int k;

                if (!throttle_kind_is_queue(e->kind)) {
                        log_warning("%s: a %s record in the device queue ledger is not one of its own; dropped",
                                    e->path, throttle_kind_to_string(e->kind));
                        ledger_remove(&q->ledger, e);
                        continue;
                }
                k = restore_if_ours(q, e, "restore-after-restart", "left by a previous run");
                if (k < 0) {
                        /* Kept, the last run's request withdrawn: the first check that can write the knob
                         * puts the original back. */
                        throttle_clear_requests(e);
                        continue;
                }
                if (k == 0)
                        log_info("%s/%s: changed by someone else since the last run, or gone; left as it is",
                                 e->path, throttle_kind_to_string(e->kind));
                ledger_remove(&q->ledger, e);
        }
        return persist(q);
}

int queue_depth_new(const QueueDepthArgs *args, QueueDepth **ret) {
        _cleanup_(queue_depth_freep) QueueDepth *q = calloc(1, sizeof(QueueDepth));
        int r;

        if (!q)
                return -ENOMEM;
        q->sys_fd = args->sys_fd >= 0 ? fcntl(args->sys_fd, F_DUPFD_CLOEXEC, 3) : -1;
        q->events = args->events;
        q->changed = args->changed;
        q->userdata = args->userdata;
        ledger_init(&q->ledger, args->ledger_file);
        if (args->ledger_file && !q->ledger.file)
                return -ENOMEM;
        r = worker_new(args->event, "qdepth", "/proc", false, on_job_done, q, &q->worker);
        if (r < 0)
                return log_error_errno(r, "Cannot start the device queue worker thread: %m");
        *ret = TAKE_PTR(q);
        return 0;
}

QueueDepth *queue_depth_free(QueueDepth *q) {
        if (!q)
                return NULL;
        worker_free(q->worker);
        closep(&q->sys_fd);
        ledger_clear(&q->ledger);
        free(q);
        return NULL;
}

const Ledger *queue_depth_ledger(const QueueDepth *q) {
        return &q->ledger;
}

size_t queue_depth_jobs_pending(const QueueDepth *q) {
        return q->n_pending;
}
