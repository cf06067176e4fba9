/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An operator's release: recorded in the ledger first, the cgroup's
 * throttles lifted at once, the points refused until it ends; ended
 * releases dropped, each with its event.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "log.h"
#include "message-ids.h"
#include "unit-name.h"
#include "util.h"

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

/* Whether an operator's release keeps the cgroup unthrottled now; the first refusal of each release is logged. */
bool actuator_release_refuses(Actuator *a, const Cgroup *cg, const ThrottleRequest *q) {
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
        r = actuator_persist(a);
        if (r >= 0)
                *ret = h;
        else if (before.path)
                *h = before;
        else
                ledger_unhold(&a->ledger, h);
        return r;
}

static int lift_all_on(Actuator *a, uint64_t cgroup_id, const char *why) {
        return actuator_lift_on(a, cgroup_id, -1, why);
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
        (void) actuator_persist(a);
        return n;
}

int actuator_release_end(Actuator *a, const char *path) {
        LedgerHold *h = ledger_find_hold(&a->ledger, path);
        uint64_t now = now_usec(CLOCK_REALTIME);

        if (!h || h->until_usec <= now)
                return -ENOENT;
        /* Ended as its time would end it: the same event, the ledger written, the change said. */
        h->until_usec = now;
        (void) actuator_end_releases(a, false);
        return actuator_persist(a);
}

const LedgerHold *actuator_released(const Actuator *a, const char *path) {
        return ledger_held(&a->ledger, path, now_usec(CLOCK_REALTIME));
}

/* Releases whose time is up are dropped; each is said with an event. Returns whether any was. */
bool actuator_end_releases(Actuator *a, bool quiet) {
        uint64_t now = now_usec(CLOCK_REALTIME);
        bool changed = false;

        for (size_t i = a->ledger.n_holds; i > 0; i--) {
                LedgerHold *h = &a->ledger.holds[i - 1];
                bool all = streq(h->path, LEDGER_HOLD_ALL);

                if (h->until_usec > now)
                        continue;
                if (!quiet)
                        release_event(a, "release-ended", all ? NULL : h->path,
                                      all ? NULL : cgroup_path_unit(h->path), h, -1,
                                      "%s: the release by %s ended; the points may throttle it again",
                                      all ? "every cgroup" : h->path, h->who);
                ledger_unhold(&a->ledger, h);
                changed = true;
        }
        return changed;
}
