/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager-actions.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name-escape.h"
#include "parse-util.h"
#include "util.h"

/* A new action on e, with the names it is shown under; NULL: none may be added (or no memory: *ret_error). */
static Action *action_begin(Manager *m, ActionKind kind, const CgEntry *e, const char *asked_by, int *ret_error) {
        _cleanup_free_ char *path = name_escape(e->cg->path), *unit = e->unit ? name_escape(e->unit) : NULL;
        Action *a;

        *ret_error = -ENOMEM;
        if (!path || (e->unit && !unit))
                return NULL;
        /* Every action kept is unfinished: as many jobs wait in the worker; it is full. */
        *ret_error = -EBUSY;
        a = action_log_add(&m->actions, kind, now_usec(CLOCK_REALTIME));
        if (!a)
                return NULL;
        snprintf(a->path, sizeof(a->path), "%s", path);
        snprintf(a->unit, sizeof(a->unit), "%s", unit ? unit : "");
        snprintf(a->asked_by, sizeof(a->asked_by), "%s", asked_by);
        return a;
}

static void action_told(Manager *m, const Action *a) {
        if (m->action_hook)
                m->action_hook(a, m->action_hook_userdata);
}

int manager_reclaim(Manager *m, CgEntry *e, uint64_t bytes, bool cache_only, const char *asked_by,
                    const Action **ret) {
        PointContext ctx = manager_context(m);
        char reason[96];
        int r;
        Action *a;

        /* Sized by the daemon: from figures of now, not the last sample of a cgroup read now and then
         * (up to ColdSampleInterval= old; it said "nothing to reclaim" of fresh cache). A cgroup gone
         * meanwhile is refused below, as the reclaim's cgroup is looked up. */
        if (!bytes && !e->hot)
                (void) observer_sample_entry(m->observer, e, manager_now_usec(m));
        a = action_begin(m, ACTION_RECLAIM, e, asked_by, &r);
        if (!a)
                return r;
        a->cache_only = cache_only;
        snprintf(reason, sizeof(reason), "asked by %s, action %" PRIu64, asked_by, a->id);
        r = alloc_runner_reclaim(&m->alloc_runner, &ctx, e, bytes ? bytes : UINT64_MAX, cache_only, reason, a->id,
                                 &a->bytes_asked);
        if (r < 0) {
                action_log_drop(&m->actions, a);
                return r;
        }
        if (r == 0) {
                /* Nothing to ask for: done at once, and said like any other end. */
                uint64_t now = now_usec(CLOCK_REALTIME);

                snprintf(a->message, sizeof(a->message), "%s: nothing to reclaim (no reclaimable %s)", a->path,
                         cache_only ? "clean cache" : "memory");
                action_finish(a, 0, now, now);
                action_told(m, a);
        }
        *ret = a;
        return 0;
}

int manager_writeback(Manager *m, const CgEntry *e, const char *asked_by, const Action **ret) {
        PointContext ctx = manager_context(m);
        char reason[96];
        int r;
        Action *a = action_begin(m, ACTION_WRITEBACK, e, asked_by, &r);

        if (!a)
                return r;
        snprintf(reason, sizeof(reason), "asked by %s, action %" PRIu64, asked_by, a->id);
        r = write_runner_writeback(&ctx, e, reason, a->id);
        if (r < 0) {
                action_log_drop(&m->actions, a);
                return r;
        }
        *ret = a;
        return 0;
}

const Action *manager_action(Manager *m, uint64_t id) {
        Action *a = action_log_find(&m->actions, id);
        uint64_t started = 0;

        if (a && a->state == ACTION_QUEUED && actuator_running_action(m->actuator, &started) == id) {
                a->state = ACTION_RUNNING;
                a->started_usec = started;
        }
        return a;
}

static void reclaim_finished(Action *a, const Job *job) {
        char freed[FORMAT_SIZE_MAX], asked[FORMAT_SIZE_MAX];

        a->bytes_freed = job->freed_earlier + u64_delta(job->before, job->after);
        if (a->state == ACTION_FAILED) {
                snprintf(a->message, sizeof(a->message), "%s: memory.reclaim failed: %s", a->path,
                         strerror(-a->error));
                return;
        }
        snprintf(a->message, sizeof(a->message), "%s: freed %s of %s asked in %" PRIu64 "ms%s%s", a->path,
                 format_size(freed, a->bytes_freed), format_size(asked, a->bytes_asked),
                 (job->earlier_usec + job->duration_usec) / USEC_PER_MSEC,
                 a->budget_reached ? " (time budget reached)" : "",
                 job->swap_was_busy || job->swap_busy ? " (cache only while the swap disk was congested)" : "");
}

static void writeback_finished(Action *a, const Job *job) {
        char before[FORMAT_SIZE_MAX] = "unknown", after[FORMAT_SIZE_MAX] = "unknown";

        a->files = job->files;
        a->dirty_before = job->dirty_before;
        a->dirty_after = job->dirty_after;
        if (a->state == ACTION_FAILED) {
                snprintf(a->message, sizeof(a->message), "%s: writeback failed: %s", a->path, strerror(-a->error));
                return;
        }
        if (a->dirty_before != UINT64_MAX)
                (void) format_size(before, a->dirty_before);
        if (a->dirty_after != UINT64_MAX)
                (void) format_size(after, a->dirty_after);
        snprintf(a->message, sizeof(a->message), "%s: wrote back %" PRIu64 " file%s in %" PRIu64 "ms%s; "
                 "dirty+writeback %s -> %s", a->path, a->files, a->files == 1 ? "" : "s",
                 (job->earlier_usec + job->duration_usec) / USEC_PER_MSEC,
                 a->budget_reached ? " (time budget reached)" : "", before, after);
}

void manager_action_job_done(Manager *m, const Job *job) {
        Action *a = action_log_find(&m->actions, job->action_id);
        /* EAGAIN from memory.reclaim is an outcome; a job stopped at its budget did what it could. */
        int error = job->result < 0 && job->result != -EAGAIN && !job->interrupted ? job->result : 0;

        if (!a || a->state == ACTION_DONE || a->state == ACTION_FAILED)
                return;
        a->budget_reached = job->interrupted;
        action_finish(a, error, job->first_started_usec ?: job->started_usec, now_usec(CLOCK_REALTIME));
        if (a->kind == ACTION_RECLAIM)
                reclaim_finished(a, job);
        else
                writeback_finished(a, job);
        action_told(m, a);
}
