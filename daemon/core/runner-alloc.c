/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation point as the loop runs it: its inputs gathered from the
 * observer, alloc_point_decide() called, reclaim handed to the actuator's
 * worker in bounded steps with what was really freed measured, allocation
 * throttles set through the actuator, and one structured event for each
 * decision. One-shot reclaim from the control API comes through here too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "log.h"
#include "message-ids.h"
#include "runner.h"
#include "util.h"

/* One memory.reclaim write asks for at most this much in a one-shot request. */
#define RECLAIM_ONE_SHOT_STEP (UINT64_C(64) << 20)

void alloc_runner_init(AllocRunner *r, char *own_cgroup) {
        /* Field by field on memory its owner zeroed: the state's arrays (about 290 KiB) stay untouched
         * pages until used, where assigning the whole struct would write every page of them. */
        r->own_cgroup = own_cgroup;
        r->swappiness_arg = -1;
        r->swap_fallback_log = (RateLimit) RATELIMIT_INIT(60 * USEC_PER_SEC, 5);
}

void alloc_runner_done(AllocRunner *r) {
        free(r->own_cgroup);
        r->own_cgroup = NULL;
}

static bool exempt(const AllocRunner *r, const char *path) {
        return streq(path, "/init.scope") || (r->own_cgroup && streq(path, r->own_cgroup));
}

static uint64_t protection_of(const CgEntry *e) {
        uint64_t p = 0;

        if (e->limits.have & (1u << LIMIT_MIN))
                p = MAX(p, e->limits.limit[LIMIT_MIN]);
        if (e->limits.have & (1u << LIMIT_LOW))
                p = MAX(p, e->limits.limit[LIMIT_LOW]);
        return p == UINT64_MAX ? 0 : p;
}

static size_t gather(const AllocRunner *r, const Observer *o, ApCgroup *out, size_t max) {
        size_t n = 0;

        for (size_t i = 0; n < max;) {
                const CgEntry *e = observer_next_hot(o, &i);
                const CgroupSample *s = e ? runner_governed_sample(e) : NULL;
                const CgroupSignals *g;

                if (!e)
                        break;
                g = &e->signals;
                if (!s || !(s->have & SAMPLE_MEMORY_STAT) || !(s->have & SAMPLE_MEMORY_CURRENT))
                        continue;
                out[n++] = (ApCgroup) {
                        .id = e->cg->id, .path = e->cg->path, .policy = e->policy,
                        .exempt = exempt(r, e->cg->path), .valid = g->valid, .interval_usec = g->interval_usec,
                        .stall_ppm = MAX(g->have_memory_stall ? g->memory_stall.some_ppm : 0,
                                         g->have_io_stall ? g->io_stall.some_ppm : 0),
                        .refault_rate = g->refault_rate, .growth_rate = g->memory_rate,
                        .memory_current = s->memory_current, .reclaimable = sample_reclaimable_bytes(s),
                        .file_clean = sample_clean_file_bytes(s),
                        .slab_reclaimable = sample_stat(s, STAT_SLAB_RECLAIMABLE),
                        .protection = protection_of(e),
                };
        }
        return n;
}

typedef struct ReclaimFigures {
        uint64_t asked, freed, duration_usec;
        bool budget_reached;
        bool shared;            /* a memory.high lowering reclaimed beside it (Job.shared) */
        uint64_t action_id;     /* an operator's action; 0: the point's */
        const char *cache_only; /* how it was kept off anon: "swappiness=0", "swap.max=0", "no" */
} ReclaimFigures;

/* How a reclaim was kept to the cache: the kernel's swappiness= argument
 * (6.11 and later), memory.swap.max held at 0 (before), or not at all (it
 * could swap, or there was no swap to keep it from, or the hold failed). */
static const char *cache_only_path(const Job *job) {
        return job->swappiness0 ? "swappiness=0" : job->swap_held ? "swap.max=0" : "no";
}

static void reclaim_event(const PointContext *ctx, const CgEntry *e, const char *action, bool observe,
                          const char *extra, const ReclaimFigures *f, const char *reason) {
        char f_asked[48], f_freed[48], f_dur[48], f_reason[200], f_obs[16], f_action[48], f_cache[40];
        const char *fields[] = { f_asked, f_freed, f_dur, f_reason, f_obs,
                                 f->budget_reached ? "BUDGET_REACHED=yes" : "BUDGET_REACHED=no",
                                 f->shared ? "SHARED=yes" : "SHARED=no", f_cache, f->action_id ? f_action : NULL,
                                 NULL };

        snprintf(f_cache, sizeof(f_cache), "CACHE_ONLY_BY=%s", f->cache_only ?: "no");
        snprintf(f_action, sizeof(f_action), "ACTION_ID=%" PRIu64, f->action_id);
        snprintf(f_asked, sizeof(f_asked), "BYTES_ASKED=%" PRIu64, f->asked);
        snprintf(f_freed, sizeof(f_freed), "BYTES_FREED=%" PRIu64, f->freed);
        snprintf(f_dur, sizeof(f_dur), "DURATION_USEC=%" PRIu64, f->duration_usec);
        snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
        snprintf(f_obs, sizeof(f_obs), "OBSERVE=%s", observe ? "yes" : "no");
        event_record(ctx->events, &(LogEvent) { .level = observe ? LOG_INFO : LOG_NOTICE,
                                                .message_id = MESSAGE_RECLAIM, .cgroup = e->cg->path,
                                                .unit = e->unit, .action = action, .fields = fields },
                     "%s: %s%s %" PRIu64 " bytes%s (%s)", e->cg->path, observe ? "would " : "", action,
                     observe ? f->asked : f->freed, extra, reason);
}

/* The index of the cgroup's count of reclaims holding memory.swap.max at 0 (added at 0 if `add`); -1. */
static ssize_t swap_hold_find(AllocRunner *r, uint64_t cgroup_id, bool add) {
        for (size_t i = 0; i < r->n_swap_holds; i++)
                if (r->swap_holds[i].cgroup_id == cgroup_id)
                        return (ssize_t) i;
        if (!add || r->n_swap_holds >= ELEMENTSOF(r->swap_holds))
                return -1;
        r->swap_holds[r->n_swap_holds].cgroup_id = cgroup_id;
        r->swap_holds[r->n_swap_holds].n = 0;
        return (ssize_t) r->n_swap_holds++;
}

static void swap_hold_forget(AllocRunner *r, size_t i) {
        r->swap_holds[i] = r->swap_holds[--r->n_swap_holds];
}

static const char *swap_hold_failure(int k) {
        switch (k) {
        case -ENOENT:
                return "it has no memory.swap.max (no swap accounting, or the root cgroup)";
        case -ECANCELED:
                return "an operator released it, or it has no process left";
        case -EBUSY:
                return "too many reclaims in flight";
        default:
                return NULL;
        }
}

/*
 * Without a way to tell the kernel "cache only" (no swappiness= on
 * memory.reclaim), memory.swap.max is held at 0 while the reclaim runs: the
 * kernel then scans no anonymous memory of the cgroup or below it. The value
 * it replaces is in the ledger before it is written, so a stop or a crash
 * puts it back. Returns true if held; false: the request is bounded by the
 * clean cache alone, which does not keep the kernel from swapping (measured
 * on 6.1: docs/allocation-point.md), and that is said.
 */
static bool hold_swap(AllocRunner *r, const PointContext *ctx, const CgEntry *e) {
        ThrottleRequest q = { .kind = THROTTLE_SWAP_MAX, .point = POINT_ALLOCATION, .value = 0,
                              .reason = "cache-only reclaim (memory.reclaim takes no swappiness= here)",
                              .lifts_when = "the reclaim ends" };
        ssize_t i = swap_hold_find(r, e->cg->id, true);
        int k = i >= 0 ? actuator_throttle_set(ctx->actuator, e->cg->id, &q) : -EBUSY;
        const char *why = swap_hold_failure(k);
        unsigned suppressed = 0;

        if (k >= 0) {
                if (!r->swap_note_logged)
                        log_info("memory.reclaim here takes no swappiness= and swap is on: cache-only reclaims "
                                 "hold memory.swap.max at 0 for their length");
                r->swap_note_logged = true;
                r->swap_holds[i].n++;
                return true;
        }
        if (i >= 0 && r->swap_holds[i].n == 0)
                swap_hold_forget(r, (size_t) i);
        if (!ratelimit_below(&r->swap_fallback_log, now_usec(CLOCK_MONOTONIC), &suppressed))
                return false;
        if (suppressed > 0)
                log_notice("%u more cache-only reclaims could not hold memory.swap.max at 0", suppressed);
        if (why)
                log_notice("%s: cannot hold memory.swap.max at 0 for a cache-only reclaim: %s; the request is bounded "
                           "by the clean cache only, and the kernel may swap out anonymous memory", e->cg->path, why);
        else
                log_full_errno(LOG_NOTICE, k, "%s: cannot hold memory.swap.max at 0 for a cache-only reclaim: %m; the "
                               "request is bounded by the clean cache only, and the kernel may swap out anonymous "
                               "memory", e->cg->path);
        return false;
}

/* A reclaim that held memory.swap.max ended: the last one of its cgroup lifts the hold. */
static void release_swap(AllocRunner *r, const PointContext *ctx, uint64_t cgroup_id) {
        ThrottleRequest q = { .kind = THROTTLE_SWAP_MAX, .point = POINT_ALLOCATION, .reason = "the cache-only reclaim ended" };
        ssize_t i = swap_hold_find(r, cgroup_id, false);
        int k;

        if (i < 0 || --r->swap_holds[i].n > 0)
                return;
        swap_hold_forget(r, (size_t) i);
        k = actuator_throttle_lift(ctx->actuator, cgroup_id, &q);
        if (k < 0)
                log_warning_errno(k, "Cannot put memory.swap.max of cgroup %" PRIu64 " back now: %m; "
                                  "the next check tries again", cgroup_id);
}

/* Says once per request that it goes on cache only, and why. */
static void say_swap_busy(const PointContext *ctx, const CgEntry *e) {
        const DevStat *d = observer_swap_congested(ctx->observer);

        if (d)
                log_notice("%s: the swap disk %" PRIu32 ":%" PRIu32 " is congested (writes there wait %" PRIu64
                           " ms): the reclaim goes on cache only", e->cg->path, d->major, d->minor,
                           d->write_wait_usec / USEC_PER_MSEC);
        else
                log_notice("%s: the swap disk was congested: the reclaim goes on cache only", e->cg->path);
}

/*
 * The request as a job; `earlier`: the job of the same request that came
 * back before this one (its figures are carried on), NULL for a new one.
 * A request that may swap is made cache only from the start while a swap
 * disk is congested: a page written there would wait in its queue, the
 * worker with it, uninterruptibly (a stop took 5-6 s), and every other
 * writer of that disk behind the reclaim's writes.
 */
static int submit_reclaim(AllocRunner *r, const PointContext *ctx, const CgEntry *e, uint64_t bytes, bool cache_only,
                          const char *reason, uint64_t action_id, const Job *earlier, uint64_t *ret_asked) {
        const CgroupSample *s = cg_entry_sample(e);
        bool swap_on = system_meminfo(observer_system_sample(ctx->observer), MEMINFO_SWAP_TOTAL, 0) > 0;
        Job job = { .kind = JOB_RECLAIM, .budget_usec = 10 * USEC_PER_SEC };
        int k;

        if (exempt(r, e->cg->path))
                return -EPERM;
        if (earlier) {
                job.freed_earlier = earlier->freed_earlier + u64_delta(earlier->before, earlier->after);
                job.swap_was_busy = earlier->swap_was_busy || earlier->swap_busy;
                job.shared = earlier->shared;
                job.earlier_usec = earlier->earlier_usec + earlier->duration_usec;
                job.first_started_usec = earlier->first_started_usec ?: earlier->started_usec;
                /* The request's time budget, not a new one. */
                job.budget_usec = u64_delta(earlier->budget_usec, earlier->duration_usec);
                if (job.budget_usec == 0)
                        return 0;
        }
        if (!cache_only && swap_on && worker_swap_congested()) {
                if (!job.swap_was_busy)
                        say_swap_busy(ctx, e);
                cache_only = job.swap_was_busy = true;
        }
        if (bytes == UINT64_MAX)
                bytes = s ? sample_reclaimable_bytes(s) : 0;
        if (cache_only && swap_on && r->swappiness_arg == 0 && s)
                bytes = MIN(bytes, sample_reclaimable_bytes(s));
        if (bytes == 0)
                return 0;
        if (cache_only && swap_on && r->swappiness_arg == 0)
                job.swap_held = hold_swap(r, ctx, e);
        job.bytes = bytes;
        job.step = MIN(e->policy ? e->policy->reclaim_step_max : RECLAIM_ONE_SHOT_STEP, RECLAIM_ONE_SHOT_STEP);
        job.swappiness0 = cache_only && r->swappiness_arg != 0;
        job.may_swap = !cache_only && swap_on;
        job.action_id = action_id;
        snprintf(job.data, sizeof(job.data), "%s", reason);
        k = actuator_run_job(ctx->actuator, e->cg->id, &job);
        if (k < 0) {
                if (job.swap_held)
                        release_swap(r, ctx, e->cg->id);
                return k;
        }
        if (ret_asked)
                *ret_asked = bytes;
        return 1;
}

int alloc_runner_reclaim(AllocRunner *r, const PointContext *ctx, const CgEntry *e, uint64_t bytes, bool cache_only,
                         const char *reason, uint64_t action_id, uint64_t *ret_asked) {
        return submit_reclaim(r, ctx, e, bytes, cache_only, reason, action_id, NULL, ret_asked);
}

/* The point hears of its own requests only: an operator's reclaim of the same cgroup is not the one the
 * point has in flight (clearing that would queue a second beside it), nor a measure of its yield. */
static void tell_point(AllocRunner *r, const Job *job, uint64_t cgroup_id, uint64_t freed, bool shared, uint64_t now,
                       uint64_t tick) {
        if (job->action_id == 0)
                alloc_point_reclaim_done(&r->state, cgroup_id, job->bytes, freed, shared, now, tick);
}

int alloc_runner_job_done(AllocRunner *r, const PointContext *ctx, const Job *job, uint64_t cgroup_id,
                          uint64_t now) {
        CgEntry *e = cgtable_find(&ctx->observer->cgroups, cgroup_id);
        uint64_t tick = ctx->config->daemon.interval_usec;
        ReclaimFigures f = { .asked = job->bytes, .freed = u64_delta(job->before, job->after),
                             .duration_usec = job->duration_usec, .budget_reached = job->interrupted,
                             .shared = job->shared };
        char extra[128];

        if (job->kind != JOB_RECLAIM)
                return 0;
        if (job->swap_held)
                release_swap(r, ctx, cgroup_id);
        if (job->result == -EINVAL && job->swappiness0) {
                /* Probed, not guessed from the version: this kernel has no swappiness= argument. */
                log_info("memory.reclaim here takes a size only (swappiness= gives EINVAL)");
                r->swappiness_arg = 0;
                /* Asked again without it; the point's request (or the operator's action) stays in flight meanwhile. */
                if (e && submit_reclaim(r, ctx, e, job->bytes, true, job->data, job->action_id, job, NULL) > 0)
                        return 1;
                tell_point(r, job, cgroup_id, 0, true, now, tick);
                return 0;
        }
        if (job->swappiness0 && (job->result >= 0 || job->result == -EAGAIN) && r->swappiness_arg != 1) {
                /* The probe's other answer, said once as the first: which path cache-only reclaims take. */
                log_info("memory.reclaim here takes swappiness=: cache-only reclaims ask with swappiness=0, "
                         "memory.swap.max is not held");
                r->swappiness_arg = 1;
        }
        if (e && job->result < 0 && job->result != -EAGAIN && !job->interrupted)
                log_warning_errno(job->result, "%s: memory.reclaim failed: %m", e->cg->path);
        else if (e) {
                r->reclaims++;
                r->reclaimed_bytes += f.freed;
                snprintf(extra, sizeof(extra), " of %" PRIu64 " asked in %" PRIu64 "ms%s%s", job->bytes,
                         job->duration_usec / USEC_PER_MSEC, job->interrupted ? ", time budget reached" :
                         job->swap_busy ? ", stopped: the swap disk is congested" : "",
                         job->shared ? ", shared with a memory.high write" : "");
                f.action_id = job->action_id;
                f.cache_only = cache_only_path(job);
                reclaim_event(ctx, e, "reclaim", false, extra, &f, job->data);
                /* What is left of it (as the worker counted, at least what each write asked) goes on cache
                 * only, under the same action and within its time budget; the point hears of it once, at
                 * its end. */
                if (job->swap_busy && !job->interrupted && job->reclaimed < job->bytes) {
                        say_swap_busy(ctx, e);
                        if (submit_reclaim(r, ctx, e, job->bytes - job->reclaimed, true, job->data, job->action_id,
                                           job, NULL) > 0)
                                return 1;
                }
        }
        tell_point(r, job, cgroup_id, f.freed, job->shared, now, tick);
        return 0;
}

static int execute(AllocRunner *r, const PointContext *ctx, const PointAction *a, uint64_t now) {
        CgEntry *e = cgtable_find(&ctx->observer->cgroups, a->cgroup_id);
        ThrottleRequest q = { .kind = THROTTLE_MEMORY_HIGH, .point = POINT_ALLOCATION, .value = a->value,
                              .reason = a->reason, .lifts_when = a->lifts_when };

        if (!e)
                return -ENODEV;
        /* A lift is never only observed: what is held goes, whatever the mode is now. */
        if (a->kind == PA_LIFT_HIGH) {
                int k = actuator_throttle_lift(ctx->actuator, a->cgroup_id, &q);
                if (k != 0 || !a->observe)
                        return k;
        }
        if (a->observe) {
                reclaim_event(ctx, e, point_action_to_string(a->kind), true, "",
                              &(ReclaimFigures) { .asked = a->value }, a->reason);
                /* Nothing was written, so nothing is learnt of the kernel's yield (a 1x learnt here
                 * would make the first enforced request the whole excess). */
                if (a->kind == PA_RECLAIM)
                        alloc_point_reclaim_done(&r->state, a->cgroup_id, a->value, a->value, true, now,
                                                 ctx->config->daemon.interval_usec);
                return 0;
        }
        switch (a->kind) {
        case PA_RECLAIM:
                return alloc_runner_reclaim(r, ctx, e, a->value, true, a->reason, 0, NULL);
        case PA_SET_HIGH:
                return actuator_throttle_set(ctx->actuator, a->cgroup_id, &q);
        case PA_LIFT_HIGH:
                return 0;       /* lifted above */
        default:
                return -EINVAL; /* the write point's */
        }
}

void alloc_runner_run(AllocRunner *r, const PointContext *ctx, uint64_t now) {
        static ApCgroup cgroups[AP_STATE_MAX];
        static PointPlan plan;
        const SystemSample *sys = observer_system_sample(ctx->observer);
        const SystemSignals *g = &ctx->observer->system_signals;
        const DaemonSettings *d = &ctx->config->daemon;
        uint64_t total = system_meminfo(sys, MEMINFO_MEM_TOTAL, 0);
        uint64_t avail = system_meminfo(sys, MEMINFO_MEM_AVAILABLE, UINT64_MAX);
        ApSettings st = {
                .global_threshold_ppm = d->system_pressure_threshold_ppm,
                .host_stall_valid = g->valid && g->have_memory_stall,
                .host_stall_ppm = g->memory_stall.some_ppm,
                .mem_available = avail,
                .mem_available_min = avail != UINT64_MAX ? total / 1000000 * d->mem_available_min_ppm : 0,
                .tick_usec = d->interval_usec,
                .throttle_hold_usec = d->throttle_hold_usec,
        };
        size_t n = gather(r, ctx->observer, cgroups, ELEMENTSOF(cgroups));

        alloc_point_decide(cgroups, n, &st, now, &r->state, &plan);
        for (size_t i = 0; i < plan.n; i++) {
                const PointAction *a = &plan.actions[i];
                int k = execute(r, ctx, a, now);

                if (k >= 0) {
                        point_counters_count(&r->counters, point_action_index(a->kind), point_action_lifts(a->kind),
                                             a->observe, k);
                        continue;
                }
                /* Forgotten, to be asked again; released by an operator (-ECANCELED, said once by the
                 * actuator), gone or a full queue is "not now", not a failure. */
                alloc_point_forget(&r->state, a);
                if (k != -ENODEV && k != -EBUSY && k != -ECANCELED)
                        event_action_failed(ctx->events, now, k, a->path, point_action_to_string(a->kind));
        }
}

void alloc_runner_throttle_dropped(AllocRunner *r, const ThrottleEntry *t) {
        PointAction a = { .kind = PA_SET_HIGH, .cgroup_id = t->cgroup_id };

        if (t->kind == THROTTLE_MEMORY_HIGH)
                alloc_point_forget(&r->state, &a);
}
