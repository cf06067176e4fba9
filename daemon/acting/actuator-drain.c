/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writers that end: the units systemd is stopping, and cgroups left with no
 * process. Their io.max caps are raised to a drain rate until what the
 * writer left is written, then lifted; their memory.high is lifted at once.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "throttle.h"
#include "unit-name.h"
#include "util.h"

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

bool actuator_path_stopping(const Actuator *a, const char *path) {
        return stopping_index(a, system_unit_of(path)) != SIZE_MAX;
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
 * the cgroup is empty or its unit stopping; the tick (actuator_drain_done) lifts it
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
        uint64_t before = actuator_value_ahead(a, t);
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
        r = actuator_persist(a);
        if (r >= 0 && throttle_effective(t) != before)
                r = actuator_apply(a, cg, t);
        if (r < 0) {
                log_warning_errno(r, "%s: cannot raise %s to drain, lifted instead: %m", t->path,
                                  throttle_file(t->kind));
                t->drain_since_usec = 0;
                return 0;       /* the caller lifts it: what is recorded does not matter then */
        }
        if (a->ops->throttle_dropped)
                a->ops->throttle_dropped(t, a->userdata);       /* the point's cap no more */
        actuator_throttle_event(a, "drain-cap", unit, t, before, throttle_effective(t), reason);
        return 1;
}

/* Whether a draining cap has done its work: its cgroup's dirty and writeback pages written, or its time up. */
bool actuator_drain_done(Cgroup *cg, const ThrottleEntry *t, const char **why) {
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
                        (void) actuator_lift_entry(a, t, why);
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
int actuator_lift_emptied(Actuator *a, uint64_t cgroup_id) {
        const char *why = "the cgroup has no process left";
        int n = drain_or_lift_caps(a, cgroup_id, NULL, why);

        return n + actuator_lift_on(a, cgroup_id, THROTTLE_MEMORY_HIGH, why);
}

/* Lifts the throttles of one kind on the cgroup of `unit`; returns how many. */
static int lift_unit(Actuator *a, const char *unit, ThrottleKind kind) {
        int n = 0;

        /* Backwards: a removal moves the last entry (already seen) into its place. */
        for (size_t i = a->ledger.n; i > 0; i--) {
                ThrottleEntry *t = &a->ledger.entries[i - 1];
                const char *u = system_unit_of(t->path);

                if (t->kind == kind && u && streq(u, unit)) {
                        (void) actuator_lift_entry(a, t, "its unit is stopping");
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
                (void) actuator_persist(a);
}
