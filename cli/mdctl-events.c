/* SPDX-License-Identifier: GPL-2.0-or-later */
/* events [--follow] [filters]: the backlog, then the Event signal; the filters are applied here. */
#include "mdctl.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "json-out.h"
#include "parse-util.h"
#include "util.h"

/* ---- --since ---- */

/* Local midnight `days_back` days before now. */
static int midnight(uint64_t now, int days_back, uint64_t *ret) {
        time_t t = (time_t) (now / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm))
                return -EINVAL;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_mday -= days_back;
        tm.tm_isdst = -1;
        t = mktime(&tm);
        if (t == (time_t) -1 || t < 0)
                return -EINVAL;
        *ret = (uint64_t) t * USEC_PER_SEC;
        return 0;
}

/* "DURATION ago" or "-DURATION". */
static int parse_ago(const char *s, uint64_t now, uint64_t *ret) {
        char buf[64];
        size_t n = strlen(s);
        uint64_t d;

        if (s[0] == '-')
                snprintf(buf, sizeof(buf), "%s", s + 1);
        else if (n > 4 && n - 4 < sizeof(buf) && streq(s + n - 4, " ago"))
                snprintf(buf, sizeof(buf), "%.*s", (int) (n - 4), s);
        else
                return -EINVAL;
        if (parse_duration(buf, &d) < 0)
                return -EINVAL;
        *ret = d < now ? now - d : 0;
        return 0;
}

/* An absolute local time: a date with or without a time of day, or a time of day today. */
static int parse_absolute(const char *s, uint64_t now, uint64_t *ret) {
        static const char *const with_date[] = { "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M",
                                                 "%Y-%m-%dT%H:%M", "%Y-%m-%d" };
        static const char *const time_only[] = { "%H:%M:%S", "%H:%M" };
        time_t t = (time_t) (now / USEC_PER_SEC);
        struct tm today, tm;

        if (!localtime_r(&t, &today))
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(with_date) + ELEMENTSOF(time_only); i++) {
                bool dated = i < ELEMENTSOF(with_date);
                const char *end;

                tm = (struct tm) { .tm_year = today.tm_year, .tm_mon = today.tm_mon, .tm_mday = today.tm_mday };
                end = strptime(s, dated ? with_date[i] : time_only[i - ELEMENTSOF(with_date)], &tm);
                if (!end || *end)
                        continue;
                tm.tm_isdst = -1;
                t = mktime(&tm);
                if (t == (time_t) -1 || t < 0)
                        return -EINVAL;
                *ret = (uint64_t) t * USEC_PER_SEC;
                return 0;
        }
        return -EINVAL;
}

int parse_since(const char *s, uint64_t now, uint64_t *ret_usec) {
        uint64_t secs;

        if (streq(s, "now")) {
                *ret_usec = now;
                return 0;
        }
        if (streq(s, "today") || streq(s, "yesterday"))
                return midnight(now, streq(s, "yesterday"), ret_usec);
        if (s[0] == '@') {
                if (parse_uint_range(s + 1, 0, UINT64_MAX / USEC_PER_SEC, &secs) < 0)
                        return -EINVAL;
                *ret_usec = secs * USEC_PER_SEC;
                return 0;
        }
        if (parse_ago(s, now, ret_usec) == 0)
                return 0;
        return parse_absolute(s, now, ret_usec);
}

/* ---- events ---- */

static const char *priority_name(int64_t p) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        return p >= 0 && p < 8 ? names[p] : "?";
}

/* An event as the daemon sends it: (seq, realtime_usec, priority, action, cgroup, unit, message, fields). */
typedef struct EventLine {
        uint64_t seq, realtime_usec;
        int64_t priority;
        const char *action, *cgroup, *unit, *message;
        const Value *fields;            /* an object; NULL if the daemon sent none */
} EventLine;

static bool event_from_value(const Value *v, EventLine *ret) {
        const Value *it = v->items;

        if (v->kind != VALUE_ARRAY || v->n < 7 || it[0].kind != VALUE_UINT || it[1].kind != VALUE_UINT ||
            it[2].kind != VALUE_INT || it[3].kind != VALUE_STRING || it[4].kind != VALUE_STRING ||
            it[5].kind != VALUE_STRING || it[6].kind != VALUE_STRING)
                return false;
        *ret = (EventLine) { it[0].u, it[1].u, it[2].i, it[3].s, it[4].s, it[5].s, it[6].s,
                             v->n > 7 && it[7].kind == VALUE_OBJECT ? &it[7] : NULL };
        return true;
}

/* --action takes a comma-separated list. */
static bool action_matches(const char *list, const char *action) {
        size_t n = strlen(action);

        for (const char *p = list; p; p = strchr(p, ',')) {
                p += *p == ',';
                if (strncmp(p, action, n) == 0 && (p[n] == ',' || p[n] == '\0'))
                        return true;
        }
        return false;
}

/* --unit: the unit's name (without a suffix: a service, as systemctl reads it), or a cgroup path. */
static bool unit_matches(const char *want, const EventLine *e) {
        size_t n = strlen(want);

        if (want[0] == '/')
                return streq(want, e->cgroup);
        if (streq(want, e->unit))
                return true;
        return !strchr(want, '.') && strncmp(e->unit, want, n) == 0 && streq(e->unit + n, ".service");
}

static bool event_matches(const EventLine *e, const Args *a) {
        if (a->events_unit && !unit_matches(a->events_unit, e))
                return false;
        if (a->events_action && !action_matches(a->events_action, e->action))
                return false;
        return !a->have_since || e->realtime_usec >= a->since_usec;
}

static void event_print(const EventLine *e, bool json) {
        char when[32];

        if (!json) {
                printf("%s  %-7s  %-16s  %s\n", format_time(when, e->realtime_usec), priority_name(e->priority),
                       e->action, e->message);
                return;
        }
        printf("{\"seq\":%" PRIu64 ",\"realtime_usec\":%" PRIu64 ",\"priority\":%" PRId64 ",\"priority_name\":\"%s\""
               ",\"action\":", e->seq, e->realtime_usec, e->priority, priority_name(e->priority));
        json_string(stdout, e->action);
        fputs(",\"cgroup\":", stdout);
        json_string_or_null(stdout, *e->cgroup ? e->cgroup : NULL);
        fputs(",\"unit\":", stdout);
        json_string_or_null(stdout, *e->unit ? e->unit : NULL);
        fputs(",\"message\":", stdout);
        json_string(stdout, e->message);
        /* Each figure of the event as a member of its own (the daemon's names never repeat the ones above). */
        for (size_t i = 0; e->fields && i < e->fields->n; i++) {
                putchar(',');
                json_string(stdout, e->fields->items[i].key);
                putchar(':');
                value_json(&e->fields->items[i], stdout);
        }
        fputc('}', stdout);
}

typedef struct Follow {
        const Args *args;
        uint64_t last_seq;
        uint64_t daemon_pid, daemon_started_usec;       /* the daemon followed, to tell a restart */
} Follow;

static int on_event(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(value_clear) Value v = {};
        Follow *f = userdata;
        EventLine e;

        if (value_read_all(m, &v) < 0 || !event_from_value(&v, &e) || e.seq <= f->last_seq)
                return 0;
        f->last_seq = e.seq;
        if (!event_matches(&e, f->args))
                return 0;
        event_print(&e, f->args->json);
        if (f->args->json)
                putchar('\n');
        fflush(stdout);
        return 0;
}

/* How many of the events match the filters. */
static size_t count_matching(const Value *events, const Args *a) {
        size_t n = 0;
        EventLine e;

        for (size_t i = 0; i < events->n; i++)
                n += event_from_value(&events->items[i], &e) && event_matches(&e, a);
        return n;
}

/* The events kept now from seq `from` on that match (the last --lines of them, but after a reconnect);
 * with `follow`, each as it is printed (JSON: one per line). */
static int events_backlog(sd_bus *bus, const Args *a, Follow *f, uint64_t from, bool resumed) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(value_clear) Value events = {};
        bool one_doc = a->json && !a->follow;
        size_t matching, skip, n = 0;
        EventLine e;
        int r;

        r = client_call_raw(bus, "cannot list the events", "ListEventsWithFields", &reply, "t", from);
        if (r < 0)
                return r;
        r = value_read(reply, &events);
        if (r < 0 || events.kind != VALUE_ARRAY)
                return client_fail("cannot read the events", r < 0 ? r : -EBADMSG);
        matching = count_matching(&events, a);
        skip = !resumed && (a->have_lines || a->have_n) && a->lines < matching ? matching - a->lines : 0;
        if (one_doc)
                fputs("{\"events\":[", stdout);
        else if (!a->json && a->legend && !resumed)
                printf("%-19s  %-7s  %-16s  %s\n", "TIME", "PRIORITY", "ACTION", "MESSAGE");
        for (size_t i = 0; i < events.n; i++) {
                if (!event_from_value(&events.items[i], &e))
                        return client_fail("cannot read the events", -EBADMSG);
                f->last_seq = e.seq;
                if (!event_matches(&e, a))
                        continue;
                if (skip > 0) {
                        skip--;
                        continue;
                }
                if (one_doc && n++)
                        putchar(',');
                event_print(&e, a->json);
                if (a->json && !one_doc)
                        putchar('\n');
        }
        if (one_doc)
                fputs("]}\n", stdout);
        fflush(stdout);
        return 0;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) {
        interrupted = 1;
}

/* ---- --follow, across restarts of the daemon ---- */

#define RECONNECT_FIRST_USEC (100 * USEC_PER_MSEC)
#define RECONNECT_MAX_USEC (5 * USEC_PER_SEC)

/* Who the daemon is (its pid and start time) and the oldest event it keeps; silent. */
static int daemon_identity(sd_bus *bus, Follow *f, uint64_t *ret_first_seq) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(value_clear) Value st = {};
        int r = sd_bus_call_method(bus, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, "GetStatus", NULL, &reply, "");

        if (r >= 0)
                r = value_read(reply, &st);
        if (r < 0)
                return r;
        if (!value_get_u64(&st, "pid", &f->daemon_pid) ||
            !value_get_u64(&st, "started_realtime_usec", &f->daemon_started_usec) ||
            !value_get_u64(&st, "events_first_seq", ret_first_seq))
                return -EBADMSG;
        return 0;
}

/* Signals first, so that nothing falls between the backlog and the stream; silent. */
static int subscribe(sd_bus *bus, Follow *f) {
        int r = sd_bus_match_signal(bus, NULL, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, "Event", on_event, f);

        if (r < 0)
                return r;
        return sd_bus_call_method(bus, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, "Subscribe", NULL, NULL, "");
}

/* Connects again, waiting 100ms, then twice as long each time up to 5s; -EINTR once interrupted. */
static int reconnect(const char *socket_path, sd_bus **ret) {
        uint64_t delay = RECONNECT_FIRST_USEC;

        while (!interrupted) {
                struct timespec ts = { (time_t) (delay / USEC_PER_SEC), (long) (delay % USEC_PER_SEC) * 1000 };

                if (client_open(socket_path, ret) >= 0)
                        return 0;
                (void) nanosleep(&ts, NULL);
                delay = MIN(delay * 2, RECONNECT_MAX_USEC);
        }
        return -EINTR;
}

/* Connected again: subscribed, said so (with how many events may be lost), then the events it kept
 * that were not seen. */
static int resume(sd_bus *bus, Follow *f) {
        uint64_t pid = f->daemon_pid, started = f->daemon_started_usec, first, from, missed;
        bool restarted;
        int r;

        r = subscribe(bus, f);
        if (r >= 0)
                r = daemon_identity(bus, f, &first);
        if (r < 0)
                return r;
        restarted = pid != f->daemon_pid || started != f->daemon_started_usec;
        /* A new daemon counts from 1 again; the same one goes on from the last seen. */
        if (restarted)
                f->last_seq = 0;
        from = f->last_seq + 1;
        missed = first > from ? first - from : 0;
        fprintf(stderr, "mdctl: reconnected to %s after %s; %" PRIu64 " event%s may have been missed\n",
                f->args->socket, restarted ? "a restart of mdreclaimd" : "the connection was lost", missed,
                missed == 1 ? "" : "s");
        return events_backlog(bus, f->args, f, from, true);
}

/* Until interrupted (0); a lost connection is made again, as often as needed. */
static int events_follow(sd_bus *bus, Follow *f) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *own = NULL;   /* `bus` is the caller's */

        while (!interrupted) {
                int r = sd_bus_process(bus, NULL);

                if (r > 0)
                        continue;
                if (r == 0) {
                        /* Bounded: an interrupt between the check and the wait is seen within a second. */
                        r = sd_bus_wait(bus, USEC_PER_SEC);
                        if (r >= 0 || r == -EINTR)
                                continue;
                }
                if (!client_disconnected(r))
                        return client_fail("following the events stopped", r);
                fprintf(stderr, "mdctl: mdreclaimd closed the connection (%s); reconnecting to %s\n", strerror(-r),
                        f->args->socket);
                do {
                        own = sd_bus_flush_close_unref(own);
                        r = reconnect(f->args->socket, &own);
                        if (r >= 0)
                                r = resume(own, f);
                } while (r < 0 && r != -EINTR && client_disconnected(r));
                if (r == -EINTR)
                        break;
                if (r < 0)
                        return client_fail("following the events stopped", r);
                fflush(stdout);
                bus = own;
        }
        return 0;
}

int verb_events(sd_bus *bus, const Args *a) {
        Follow f = { .args = a };
        uint64_t first;
        int r;

        if (a->follow) {
                struct sigaction sa = { .sa_handler = on_interrupt };

                /* Before anything is printed: an interrupt after the first line ends the stream cleanly. */
                sigaction(SIGINT, &sa, NULL);
                sigaction(SIGTERM, &sa, NULL);
                r = subscribe(bus, &f);
                if (r >= 0)
                        r = daemon_identity(bus, &f, &first);
                if (r < 0)
                        return client_fail("cannot follow the events", r);
        }
        r = events_backlog(bus, a, &f, 0, false);
        if (r < 0 || !a->follow)
                return r;
        return events_follow(bus, &f);
}
