/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point as the loop runs it: its inputs gathered from the
 * observer, write_point_decide() called, its plan handed to the actuator
 * (caps and dirty budgets as throttles, writeback as jobs), and what it
 * would do in observe mode recorded as events.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "dirty-search.h"
#include "log.h"
#include "message-ids.h"
#include "runner.h"
#include "util.h"

void write_runner_init(WriteRunner *w) {
        /* On memory its owner zeroed, as alloc_runner_init(). */
        w->dirty_ratio_pct = 20;
}

/* The memory a cgroup's dirty budget is a share of: memory.max, else memory.high, else the host's. */
static uint64_t memory_limit(const CgEntry *e, uint64_t host_mem) {
        if ((e->limits.have & (1u << LIMIT_MAX)) && e->limits.limit[LIMIT_MAX] != UINT64_MAX)
                return e->limits.limit[LIMIT_MAX];
        if ((e->limits.have & (1u << LIMIT_HIGH)) && e->limits.limit[LIMIT_HIGH] != UINT64_MAX)
                return e->limits.limit[LIMIT_HIGH];
        return host_mem;
}

uint64_t write_latency_target(const Policy *p, const DaemonSettings *d, const MetadataView *v,
                              const DeviceRate *devices, size_t n_devices, int *ret_fs) {
        uint64_t best = 0;

        if (ret_fs)
                *ret_fs = -1;
        if (p->io_latency_target_usec)
                return p->io_latency_target_usec == POLICY_LATENCY_OFF ? 0 : p->io_latency_target_usec;
        if (d->io_latency_target_usec)
                return d->io_latency_target_usec == POLICY_LATENCY_OFF ? 0 : d->io_latency_target_usec;
        if (!fs_latency_targets_apply(d))
                return 0;
        for (size_t i = 0; i < n_devices; i++)
                for (size_t j = 0; j < v->n; j++) {
                        const FsMetadata *f = &v->fs[j];
                        uint64_t t = d->fs_latency_target_usec[f->type];

                        if (f->disk_major != devices[i].major || f->disk_minor != devices[i].minor || !t ||
                            (best && best <= t))
                                continue;
                        best = t;
                        if (ret_fs)
                                *ret_fs = (int) f->type;
                }
        return best;
}

/* Whether the cgroup was made while the daemon runs, WP_NEWBORN_USEC ago or less. */
static bool newborn(const CgEntry *e, uint64_t now) {
        return e->found_usec && now - e->found_usec < WP_NEWBORN_USEC;
}

/* One cgroup as the write point sees it, under policy p. */
static WpCgroup wp_cgroup_of(const PointContext *ctx, const CgEntry *e, const CgroupSample *s, const Policy *p,
                             uint64_t host_mem, uint64_t now) {
        const Observer *o = ctx->observer;
        size_t n_devices = e->signals.valid ? e->signals.n_devices : 0;

        return (WpCgroup) {
                .id = e->cg->id, .path = e->cg->path, .policy = p, .protect = p->protect,
                .newborn = newborn(e, now),
                /* A protected cgroup's devices are guarded while it runs: cgroup.events, through a kept fd. */
                .running = p->protect && cgroup_populated(e->cg) > 0,
                .io_limit_ppm = p->io_pressure_limit_ppm ?: ctx->config->daemon.io_pressure_limit_ppm,
                .have_io_stall = e->signals.valid && e->signals.have_io_stall,
                .io_stall_ppm = e->signals.io_stall.some_ppm,
                .io_stall_usec = e->signals.io_stall.some_usec,
                .io_latency_target_usec = write_latency_target(p, &ctx->config->daemon, &o->metadata,
                                                               e->signals.devices, n_devices, NULL),
                .have_memory = (s->have & SAMPLE_MEMORY_CURRENT) && (s->have & SAMPLE_MEMORY_STAT),
                .memory_current = s->memory_current,
                .file = sample_stat(s, STAT_FILE),
                .dirty = sample_dirty_bytes(s),
                .memory_limit = memory_limit(e, host_mem),
                .devices = e->signals.devices, .n_devices = n_devices,
        };
}

/*
 * What a cgroup under no policy is held to (CapWritersWithoutPolicy=): a
 * policy of the default priority that enforces, and sets nothing else. It
 * may be capped for a protected cgroup of that priority or higher, and its
 * capped backlog is bounded like any capped writer's.
 */
static const Policy writer_without_policy = {
        .name = (char *) "(no policy)", .file = (char *) "", .mode = POLICY_MODE_ENFORCE,
        .priority = POLICY_PRIORITY_DEFAULT, .cap_writes = true, .metadata_cache_max = UINT64_MAX,
};

static bool capped_by_point(const WritePointState *state, uint64_t id) {
        for (size_t i = 0; i < state->n_caps; i++)
                if (state->caps[i].cgroup_id == id)
                        return true;
        return false;
}

/* A cgroup under no policy that writes (more than a trickle to a device, or dirty data piling up), or
 * that the point holds a cap on: it stays in view until the point lifts it. Never the root (no
 * io.max there). */
static bool unmanaged_writer(const CgEntry *e, const CgroupSample *s, const WritePointState *state) {
        if (e->policy || e->gone || !s || streq(e->cg->path, "/"))
                return false;
        return (e->signals.valid && e->signals.write_rate >= WP_WRITING_RATE_MIN) ||
               sample_dirty_bytes(s) >= WP_GUARD_DIRTY_MIN || capped_by_point(state, e->cg->id);
}

/*
 * out[first..*n] without the cgroups that are an ancestor of another one
 * there: io.stat counts a cgroup's descendants' io, so a slice "writes" what
 * the service in it writes, and the service is the one to cap. An ancestor
 * the point holds a cap on stays: it was capped first because its writers
 * each held too little to be found, and its throttle holds the bios they
 * queued before their own caps came; lifted then, all of them reach the
 * device at once (measured: four dd's under one slice, 60 MiB let go, the
 * protected cgroup's op 3.8 s against 0.2 s beside a static cap). Once a
 * writer below it is capped it is superseded: held, raised to what the caps
 * below it let through, lifted with them (wp_relax_caps()).
 */
static void keep_deepest(WpCgroup *out, size_t first, size_t *n, const WritePointState *state) {
        for (size_t i = first; i < *n;) {
                bool above = false, capped_below = false;

                for (size_t j = first; j < *n; j++)
                        if (j != i && cgroup_path_is_below(out[j].path, out[i].path)) {
                                above = true;
                                capped_below |= capped_by_point(state, out[j].id);
                        }
                if (above && capped_by_point(state, out[i].id)) {
                        out[i].above_writers = true;
                        out[i++].superseded = capped_below;
                } else if (above)
                        out[i] = out[--*n];
                else
                        i++;
        }
}

/* Dirty data on the host beyond what the cgroups in view hold, 32 MiB or more: a writer's first second
 * in the page cache (a service's fsyncs leave none). A cgroup under no policy not capped yet does not
 * count: it may be a slice whose turn among the cold ones came before its writer's, and the writer is
 * the one to cap; nor does a slice held over its writers (keep_deepest()): its dirty data is theirs. Returns
 * what was found, for the log; NULL: none. */
static const char *unseen_dirty(const Observer *o, const WritePointState *state, const WpCgroup *cg, size_t n,
                                char *buf, size_t size) {
        uint64_t dirty = 0;

        for (size_t k = 0; k < n; k++)
                if (!cg[k].above_writers && (!cg[k].implicit || capped_by_point(state, cg[k].id)))
                        dirty += cg[k].dirty;
        if (o->system_signals.dirty_bytes < dirty + 2 * WP_GUARD_DIRTY_MIN)
                return NULL;
        snprintf(buf, size, "the host holds %" PRIu64 " bytes of dirty data, the cgroups in view %" PRIu64,
                 o->system_signals.dirty_bytes, dirty);
        return buf;
}

/* A device that completes writes beyond what the cgroups in view write there: a quarter of its capacity
 * or more, 4 MiB/s before that is known. The journal a protected cgroup's fsyncs make a kernel thread
 * write is charged to no cgroup in view and can pass that bound: in the benches it started a sweep every
 * RescanInterval= while the victim ran. A slice held over its writers counts their io again: not counted. */
static const char *unseen_device_writes(const Observer *o, const WpCgroup *cg, size_t n, char *buf, size_t size) {
        for (size_t i = 0; i < o->devices.n; i++) {
                const DevStat *d = &o->devices.dev[i];
                uint64_t seen = 0, unexplained = MAX(d->capacity / 4, UINT64_C(4) << 20);

                for (size_t k = 0; k < n; k++)
                        for (size_t j = 0; !cg[k].above_writers && j < cg[k].n_devices; j++)
                                if (cg[k].devices[j].major == d->major && cg[k].devices[j].minor == d->minor)
                                        seen += cg[k].devices[j].wbytes_per_sec;
                if (d->write_rate > seen && d->write_rate - seen >= unexplained) {
                        snprintf(buf, size, "%" PRIu32 ":%" PRIu32 " completes %" PRIu64 " B/s, the cgroups in view "
                                 "write %" PRIu64, d->major, d->minor, d->write_rate, seen);
                        return buf;
                }
        }
        return NULL;
}

/*
 * A writer under no policy is a cold cgroup until its turn comes, up to
 * ColdInterval= later. When the host holds dirty data the cgroups in view
 * do not, those holding it are searched for down the tree (dirty-search.h:
 * a few reads, at most once per WP_SEARCH_USEC) and sampled at once, so
 * that this tick sees them. A device that completes writes nobody in view
 * makes (a writer whose data goes straight to it) has every cold cgroup
 * sampled at the next two passes instead, at most once per RescanInterval=.
 * Only while a protected cgroup is in view; once found, a writer stays in
 * view (warm). True: cgroups were sampled (found or not), gather again.
 */
static bool sweep_for_writers(WriteRunner *w, const PointContext *ctx, const WpCgroup *cg, size_t n, uint64_t now) {
        DirtySearch found;
        char why[160];

        /* Only while a guard stands: a writer found beside a protected cgroup that does not run would
         * not be capped, so it would not count as seen, and the search would come again and again. */
        if (w->guarding && (!w->searched_usec || now - w->searched_usec >= WP_SEARCH_USEC) &&
            unseen_dirty(ctx->observer, &w->state, cg, n, why, sizeof(why))) {
                w->searched_usec = now;
                w->searches++;
                if (dirty_search(ctx->observer, WP_GUARD_DIRTY_MIN, now, &found) > 0) {
                        log_debug("%s: %zu cgroup(s) holding dirty data found in %zu reads", why, found.found,
                                  found.reads);
                        return true;
                }
                /* What the search sampled may be in `cg` too, its device rates (which `cg` points to) moved
                 * to a larger buffer: gathered again, the devices looked at next tick. */
                if (found.reads > 0)
                        return true;
        }
        if (w->swept_usec && now - w->swept_usec < ctx->config->daemon.rescan_interval_usec)
                return false;
        if (!unseen_device_writes(ctx->observer, cg, n, why, sizeof(why)))
                return false;
        log_debug("%s: every cgroup sampled for the writer", why);
        observer_warm_all(ctx->observer);
        w->want_rescan = true;
        w->swept_usec = now;
        return false;
}

/* A cgroup under no policy made beside a running protected one: in view from the tick it is found,
 * sampled every pass while it is new, so that its cap is in place before its first write and goes
 * if it does not write (WP_NEWBORN_USEC). */
static bool unmanaged_new(const CgEntry *e, uint64_t now) {
        return !e->policy && !e->gone && newborn(e, now);
}

/* ... its sample; before its first one it is seen empty. */
static const CgroupSample *newborn_sample(const PointContext *ctx, CgEntry *e) {
        static const CgroupSample empty;

        observer_warm(ctx->observer, e);
        return cg_entry_sample(e) ?: &empty;
}

/* Whether a cgroup sits below one under a policy (of any mode): that policy speaks for it. Its io is in
 * the ancestor's io.stat and its dirty data in the ancestor's memory.stat, so the point caps the
 * ancestor if the policy lets it; on its own it is never capped, or a protected service's child, or
 * one of a policy with CapWrites=no, would be held for another's sake. */
static bool below_a_policy(CgTable *t, const char *path) {
        char up[PATH_MAX];
        char *slash;

        if (strlen(path) >= sizeof(up))
                return false;
        strcpy(up, path);
        while ((slash = strrchr(up, '/')) && slash != up) {
                const CgEntry *e;

                *slash = '\0';
                e = cgtable_find_path(t, up);
                if (e && e->policy)
                        return true;
        }
        return false;
}

static size_t gather(const PointContext *ctx, const WritePointState *state, WpCgroup *out, size_t max,
                     uint64_t now) {
        const Observer *o = ctx->observer;
        uint64_t host_mem = system_meminfo(observer_system_sample(o), MEMINFO_MEM_TOTAL, 0);
        size_t n = 0, governed;
        bool protecting = false;

        for (size_t i = 0; n < max;) {
                const CgEntry *e = observer_next_hot(o, &i);
                const CgroupSample *s;

                if (!e)
                        break;
                s = runner_governed_sample(e);

                if (!s)
                        continue;
                out[n] = wp_cgroup_of(ctx, e, s, e->policy, host_mem, now);
                protecting |= out[n++].protect;
        }
        /* Those the point holds a cap on stay in view after the protected cgroup has gone, until the
         * point lifts their caps at the end of the hold time (out of view, a cap is lifted at once). */
        if (!ctx->config->daemon.cap_writers_without_policy || (!protecting && state->n_caps == 0))
                return n;
        governed = n;
        for (size_t i = 0; i < o->cgroups.n && n < max && n - governed < WP_UNMANAGED_WRITERS_MAX; i++) {
                CgEntry *e = &o->cgroups.entries[i];
                const CgroupSample *s = cg_entry_sample(e);

                bool writer = unmanaged_writer(e, s, state);

                if ((!writer && !(protecting && unmanaged_new(e, now))) ||
                    below_a_policy(&ctx->observer->cgroups, e->cg->path))
                        continue;
                if (!writer)
                        s = newborn_sample(ctx, e);
                out[n] = wp_cgroup_of(ctx, e, s, &writer_without_policy, host_mem, now);
                out[n++].implicit = true;
        }
        keep_deepest(out, governed, &n, state);
        return n;
}

static void observe_event(const PointContext *ctx, const PointAction *a, const CgEntry *e) {
        /* A device only for what has one (a cap, a queue): a memory.high names none. */
        bool device = a->major || a->minor;
        char f_reason[200], f_value[48], f_dev[48], dev[48] = "";
        const char *fields[] = { f_reason, f_value, "OBSERVE=yes", device ? f_dev : NULL, NULL };

        snprintf(f_reason, sizeof(f_reason), "REASON=%s", a->reason);
        snprintf(f_value, sizeof(f_value), "VALUE=%" PRIu64, a->value);
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, a->major, a->minor);
        if (device)
                snprintf(dev, sizeof(dev), ", device %" PRIu32 ":%" PRIu32, a->major, a->minor);
        event_record(ctx->events, &(LogEvent) { .level = LOG_INFO, .message_id = MESSAGE_WRITE_POINT,
                                                .cgroup = a->path, .unit = e ? e->unit : NULL,
                                                .action = point_action_to_string(a->kind), .fields = fields },
                     "%s: would %s (value %" PRIu64 "%s): %s", a->path, point_action_to_string(a->kind), a->value,
                     dev, a->reason);
}

static ThrottleRequest request_of(const PointAction *a) {
        bool cap = a->kind == PA_SET_CAP || a->kind == PA_LIFT_CAP;

        return (ThrottleRequest) { .kind = cap ? THROTTLE_IO_WBPS : THROTTLE_MEMORY_HIGH,
                                   .major = cap ? a->major : 0, .minor = cap ? a->minor : 0,
                                   .point = POINT_WRITE, .value = a->value, .drain = cap ? a->drain : 0,
                                   .reason = a->reason, .lifts_when = a->lifts_when };
}

/* A device's queue made shallow or restored (ManageQueueDepth=); a lift is never only observed. */
static int queue_action(const PointContext *ctx, const PointAction *a, const CgEntry *e) {
        QueueRequest q = { .major = a->major, .minor = a->minor, .nr_requests = a->value,
                           .max_sectors_kb = a->queue_kb, .reason = a->reason, .lifts_when = a->lifts_when };

        if (!ctx->queues)
                return -ENOTSUP;
        if (a->kind == PA_LIFT_QUEUE)
                return queue_depth_lift(ctx->queues, a->major, a->minor, a->reason);
        if (a->observe) {
                observe_event(ctx, a, e);
                return 0;
        }
        return queue_depth_set(ctx->queues, &q);
}

static int execute(const PointContext *ctx, const PointAction *a) {
        CgEntry *e = cgtable_find(&ctx->observer->cgroups, a->cgroup_id);
        ThrottleRequest q = request_of(a);
        int r;

        switch (a->kind) {
        case PA_SET_CAP:
        case PA_SET_BUDGET:
                if (a->observe) {
                        observe_event(ctx, a, e);
                        return 0;
                }
                return actuator_throttle_set(ctx->actuator, a->cgroup_id, &q);
        case PA_LIFT_CAP:
        case PA_LIFT_BUDGET:
                /* A lift is never only observed: what is held goes, whatever the mode is now. */
                r = actuator_throttle_lift(ctx->actuator, a->cgroup_id, &q);
                if (r == 0 && a->observe)
                        observe_event(ctx, a, e);
                return r;
        case PA_WRITEBACK:
                if (a->observe) {
                        observe_event(ctx, a, e);
                        return 0;
                }
                return e ? write_runner_writeback(ctx, e, a->reason, 0) : -ENODEV;
        case PA_SET_QUEUE:
        case PA_LIFT_QUEUE:
                return queue_action(ctx, a, e);
        default:
                return -EINVAL;         /* the allocation point's */
        }
}

static void io_missing(WriteRunner *w, const CgEntry *e) {
        if (w->io_missing_logged)
                return;
        w->io_missing_logged = true;
        log_warning("%s has no io.max: the io controller is not enabled for it. Enable it in its parent's "
                    "cgroup.subtree_control (systemd: IOAccounting=yes on the unit or a slice above it); "
                    "write caps are skipped, everything else goes on", e->cg->path);
}

/* An action the actuator did not carry out: the point forgets it and asks again later. Not now
 * (-ECANCELED: an operator released the cgroup; the actuator said so once), the cgroup gone or the
 * queue full are not failures. */
static void failed(WriteRunner *w, const PointContext *ctx, const PointAction *a, int r, uint64_t now) {
        const CgEntry *e;

        write_point_forget(&w->state, a);
        if (r == -ECANCELED)
                return;
        if (r == -ENOENT && a->kind == PA_SET_CAP) {
                if ((e = cgtable_find(&ctx->observer->cgroups, a->cgroup_id)))
                        io_missing(w, e);
        } else if (r != -ENODEV && r != -EBUSY)
                event_action_failed(ctx->events, now, r, a->path, point_action_to_string(a->kind));
}

void write_runner_run(WriteRunner *w, const PointContext *ctx, uint64_t now) {
        static WpCgroup cgroups[WP_CGROUPS_MAX];
        static PointPlan plan;
        const Observer *o = ctx->observer;
        const DaemonSettings *d = &ctx->config->daemon;
        WpDevice devices[DEVSTAT_MAX];
        WpSettings st = {
                .hold_usec = d->cap_hold_usec,
                .write_rate_min_ppm = d->write_rate_min_ppm,
                .dirty_ratio_pct = w->dirty_ratio_pct,
                .global_guard_ppm = d->global_dirty_guard_ppm,
                .guard_rate_ppm = d->guard_rate_ppm,
                .host_dirty = o->system_signals.dirty_bytes,
                .host_dirty_threshold = o->system_signals.dirty_threshold_bytes,
                .manage_queue_depth = d->manage_queue_depth,
        };
        size_t n = gather(ctx, &w->state, cgroups, ELEMENTSOF(cgroups), now), nd = 0;
        bool protecting = false;

        w->guarding = false;
        for (size_t i = 0; i < n; i++) {
                protecting |= cgroups[i].protect;
                w->guarding |= cgroups[i].protect && cgroups[i].running;
        }
        if (protecting && d->cap_writers_without_policy && sweep_for_writers(w, ctx, cgroups, n, now))
                n = gather(ctx, &w->state, cgroups, ELEMENTSOF(cgroups), now);

        for (size_t i = 0; i < o->devices.n; i++) {
                const DevStat *dv = &o->devices.dev[i];
                devices[nd++] = (WpDevice) { dv->major, dv->minor, dv->write_rate, devstat_capacity(dv) };
        }
        write_point_decide(cgroups, n, devices, nd, &st, now, &w->state, &plan);
        if (plan.truncated)
                log_warning("The write point's plan was cut at %d actions", WP_ACTIONS_MAX);
        for (size_t i = 0; i < plan.n; i++) {
                const PointAction *a = &plan.actions[i];
                int r = execute(ctx, a);

                if (r < 0)
                        failed(w, ctx, a, r, now);
                else
                        point_counters_count(&w->counters, point_action_index(a->kind),
                                             point_action_lifts(a->kind), a->observe, r);
        }
}

int write_runner_writeback(const PointContext *ctx, const CgEntry *e, const char *reason, uint64_t action_id) {
        Job job = { .kind = JOB_WRITEBACK, .budget_usec = action_id ? WRITEBACK_ACTION_BUDGET_USEC : 10 * USEC_PER_SEC,
                    .action_id = action_id, .to_completion = action_id != 0 };
        int r = actuator_run_job(ctx->actuator, e->cg->id, &job);

        if (r >= 0)
                log_debug("%s: writeback queued (%s)", e->cg->path, reason);
        return r;
}

void write_runner_job_done(WriteRunner *w, const Job *job, uint64_t cgroup_id) {
        if (job->kind == JOB_WRITEBACK)
                write_point_writeback_done(&w->state, cgroup_id);
}

void write_runner_throttle_dropped(WriteRunner *w, const ThrottleEntry *t) {
        PointAction a = { .cgroup_id = t->cgroup_id, .major = t->major, .minor = t->minor, .previous = UINT64_MAX };

        if (t->kind == THROTTLE_SWAP_MAX)
                return;         /* the allocation point's, for its reclaims */
        a.kind = t->kind == THROTTLE_IO_WBPS ? PA_SET_CAP : PA_SET_BUDGET;
        write_point_forget(&w->state, &a);
}
