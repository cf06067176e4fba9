/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The throttles checked and put back: at start, what a previous run left;
 * every tick, whether our values are still in place (someone else's wins);
 * at stop, every original written back. A record whose cgroup cannot be
 * opened or written now is kept for the next try.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <inttypes.h>

#include "log.h"
#include "throttle.h"
#include "util.h"

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
        if (current != t->applied && current != throttle_effective(t) && !actuator_pending_value(a, t, current) &&
            !high_step_value(t, current))
                return 0;
        r = cgroup_write(cg, throttle_file(t->kind),
                         throttle_format(t->kind, t->major, t->minor, t->original, buf, sizeof(buf)));
        if (r < 0)
                return log_warning_errno(r, "%s: cannot restore %s: %m", t->path, throttle_file(t->kind));
        actuator_throttle_event(a, action, unit, t, current, t->original, reason);
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
        (void) actuator_end_releases(a, true);
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
        (void) actuator_persist(a);
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
        if (throttle_effective(t) != t->applied && actuator_apply(a, cg, t) < 0)
                return false;
        if (throttle_requested(t) || t->applied != t->original || actuator_write_in_flight(a, t))
                return false;
        ledger_remove(&a->ledger, t);
        return true;
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
        bool changed = actuator_end_releases(a, false);
        uint64_t emptied[16];
        size_t n_emptied = 0;

        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                const char *unit;
                int err;
                Cgroup *cg = lookup_why(a, t->cgroup_id, &unit, &err);
                uint64_t current, before = t->applied;

                if (actuator_write_in_flight(a, t))
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
                        actuator_drop_vanished(a, t, unit, false);
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
                        else if (actuator_drain_done(cg, t, &why)) {
                                (void) actuator_lift_entry(a, t, why);
                                changed = true;
                        }
                        continue;
                }
                actuator_throttle_event(a, "foreign-change", unit, t, before, current,
                                        "changed by someone else: theirs wins and becomes the original");
                actuator_drop_entry(a, t);
                changed = true;
        }
        for (size_t i = 0; i < n_emptied; i++)
                changed |= actuator_lift_emptied(a, emptied[i]) > 0;
        if (changed)
                (void) actuator_persist(a);
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
        (void) actuator_persist(a);
}
