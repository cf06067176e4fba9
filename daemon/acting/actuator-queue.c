/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The jobs the actuator has in the worker, from their submission to their
 * report: how many each lane holds, which throttle write is still on its
 * way and what it will leave in the file, which were superseded by a newer
 * value, and which reclaim ran beside a memory.high lowering.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

static bool same_throttle(const PendingJob *p, const ThrottleEntry *t) {
        return p->kind == JOB_FILE_WRITE && p->cgroup_id == t->cgroup_id && p->throttle == t->kind &&
               p->major == t->major && p->minor == t->minor;
}

bool actuator_write_in_flight(const Actuator *a, const ThrottleEntry *t) {
        for (size_t i = 0; i < a->n_pending; i++)
                if (same_throttle(&a->pending[i], t))
                        return true;
        return false;
}

/* The value t holds once the writes queued for it are done: the newest one's, or the one applied. */
uint64_t actuator_value_ahead(const Actuator *a, const ThrottleEntry *t) {
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
int actuator_submit(Actuator *a, Cgroup *cg, Job *job, PendingJob p) {
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

/*
 * The memory.high writes for t still in the worker lose their point: a newer
 * value goes in now, from the loop (at `now`), or through the worker as the
 * job `keep` (0: none; `now` SUPERSEDED_BY_QUEUE). A lowering still stepping
 * down would otherwise hold a raise behind it for as long as the kernel
 * takes to reclaim each step.
 */
void actuator_supersede_writes(Actuator *a, const ThrottleEntry *t, uint64_t keep, uint64_t now) {
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

/* Whether `value` is what a write of ours on its way (or abandoned at stop) puts in t's file: its
 * value, or for memory.high one of the steps it takes down to it (worker.c). */
bool actuator_pending_value(const Actuator *a, const ThrottleEntry *t, uint64_t value) {
        for (size_t i = 0; i < a->n_pending; i++) {
                const PendingJob *p = &a->pending[i];

                if (same_throttle(p, t) && (p->value == value || (t->kind == THROTTLE_MEMORY_HIGH &&
                                                                  p->value < value && value < p->from)))
                        return true;
        }
        return false;
}
