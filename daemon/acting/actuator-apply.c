/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A throttle's value put in place and recorded: written at once or through
 * the worker, the ledger file rewritten (the cgroup.events watches follow
 * it), an entry's requests lifted at once, an entry dropped, and the event
 * that says each change.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>

#include "log.h"
#include "message-ids.h"
#include "throttle.h"
#include "util.h"

void actuator_format_value(uint64_t v, char *buf, size_t size) {
        if (v == THROTTLE_NONE)
                snprintf(buf, size, "max");
        else
                snprintf(buf, size, "%" PRIu64, v);
}

/* One event for a throttle change, with the fields an operator filters on. */
void actuator_throttle_event(Actuator *a, const char *action, const char *unit, const ThrottleEntry *t,
                             uint64_t before, uint64_t after, const char *reason) {
        char f_dev[48], f_before[48], f_after[48], f_reason[200], f_knob[64], what[48], b[24], v[24];
        const char *fields[] = { f_knob, f_dev, f_before, f_after, f_reason, "OBSERVE=no", NULL };

        actuator_format_value(before, b, sizeof(b));
        actuator_format_value(after, v, sizeof(v));
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

/* Writes the entry's effective value: io.max and memory.swap.max at once,
 * memory.high at once where the kernel will not reclaim for it, else through
 * the worker. */
int actuator_apply(Actuator *a, Cgroup *cg, ThrottleEntry *t) {
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
                        actuator_supersede_writes(a, t, 0, before_write);
                return 0;
        }
        snprintf(job.file, sizeof(job.file), "memory.high");
        job.headroom = a->high_headroom;
        job.ceiling = t->original;
        r = actuator_submit(a, cg, &job, (PendingJob) { .kind = JOB_FILE_WRITE, .throttle = t->kind, .value = v,
                                                        .from = actuator_value_ahead(a, t) });
        if (r < 0)
                return r;
        actuator_supersede_writes(a, t, job.cookie, SUPERSEDED_BY_QUEUE);
        return 0;
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
void actuator_watches_sync(Actuator *a) {
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

/* Writes the ledger file after a change, and says that the throttles changed. */
int actuator_persist(Actuator *a) {
        int r = ledger_save(&a->ledger);

        actuator_watches_sync(a);
        if (r < 0)
                log_warning_errno(r, "Cannot write the throttle ledger %s: %m", strna(a->ledger.file));
        if (a->ops->throttles_changed)
                a->ops->throttles_changed(a->userdata);
        return r;
}

const char *actuator_lift_action(ThrottleKind kind) {
        if (kind == THROTTLE_SWAP_MAX)
                return "restore-swap-max";
        return kind == THROTTLE_IO_WBPS ? "lift-cap" : "restore-memory-high";
}

/* Every point's request on t withdrawn at once, the original written back, the points told. */
int actuator_lift_entry(Actuator *a, ThrottleEntry *t, const char *why) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, t->cgroup_id, &unit, &err);
        uint64_t before = actuator_value_ahead(a, t);
        int r = 0;

        throttle_clear_requests(t);
        /* What a memory.high write still queued brings counts: the original goes in behind it. */
        if (cg && t->original != before) {
                r = actuator_apply(a, cg, t);
                if (r >= 0)
                        actuator_throttle_event(a, actuator_lift_action(t->kind), unit, t, before, t->original, why);
                else
                        log_warning_errno(r, "%s: cannot lift %s: %m", t->path, throttle_file(t->kind));
        }
        if (a->ops->throttle_dropped)
                a->ops->throttle_dropped(t, a->userdata);
        if (err == -ENODEV || (cg && t->applied == t->original && !actuator_write_in_flight(a, t)))
                ledger_remove(&a->ledger, t);
        return r;
}

/* Lifts every throttle on the cgroup (0: on every cgroup) of one kind (-1: any); returns how many. */
int actuator_lift_on(Actuator *a, uint64_t cgroup_id, int kind, const char *why) {
        int n = 0;

        /* Backwards: a removal moves the last entry (already seen) into its place. */
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];

                if ((cgroup_id != 0 && t->cgroup_id != cgroup_id) || (kind >= 0 && (int) t->kind != kind))
                        continue;
                (void) actuator_lift_entry(a, t, why);
                n++;
        }
        return n;
}

void actuator_drop_entry(Actuator *a, ThrottleEntry *t) {
        if (a->ops->throttle_dropped)
                a->ops->throttle_dropped(t, a->userdata);
        ledger_remove(&a->ledger, t);
}

/* The cgroup went away with the throttle on it: nothing to put back; the record goes, and says so
 * (`heard`: by the cgroup.events watch, woken by the emptying or the removal, rather than found at
 * a tick). */
void actuator_drop_vanished(Actuator *a, ThrottleEntry *t, const char *unit, bool heard) {
        char f_knob[64], f_dev[48], f_value[48], what[48], v[24];
        const char *fields[] = { f_knob, f_dev, f_value, "OBSERVE=no", NULL };

        actuator_format_value(t->applied, v, sizeof(v));
        snprintf(f_knob, sizeof(f_knob), "KNOB=%s", throttle_knob(t->kind));
        snprintf(f_dev, sizeof(f_dev), "DEVICE=%" PRIu32 ":%" PRIu32, t->major, t->minor);
        snprintf(f_value, sizeof(f_value), "VALUE=%s", v);
        /* A draining cap's usual end (a stopped unit's cgroup removed): the kernel writes the rest at it. */
        event_record(a->events, &(LogEvent) { .level = t->drain_since_usec ? LOG_INFO : LOG_WARNING,
                                              .message_id = MESSAGE_THROTTLE, .cgroup = t->path, .unit = unit,
                                              .action = "cgroup-gone", .fields = fields },
                     "%s: the cgroup is gone with %s at %s%s; its throttle record is dropped%s", t->path,
                     throttle_describe(t, what, sizeof(what)), v,
                     t->drain_since_usec ? ", its drain rate: the kernel writes what is left at it" : "",
                     heard ? " (heard through its cgroup.events watch, after the removal)" : "");
        actuator_drop_entry(a, t);
}
