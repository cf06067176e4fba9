/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events [--follow] [filters]: the history the journal holds of the daemons
 * that served this socket, then what the daemon's ring keeps (each event
 * once), then the Event signal; the filters are applied here.
 */
#include "mdctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "event-log.h"
#include "events-journal.h"
#include "events-text.h"
#include "json-out.h"
#include "nearest.h"
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

/* How many events the journal gives at most: without --since or --lines, as many as the daemon keeps. */
#define EVENTS_JOURNAL_MAX 20000
#define EVENTS_DEFAULT_LINES EVENT_LOG_SIZE

static const char *const known_actions[] = { EVENT_ACTIONS };

/* --action: each name one the daemon records; else a usage error naming the nearest (or all). */
static int check_actions(const char *list) {
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;

        if (!copy)
                return client_fail("cannot check --action", -ENOMEM);
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                NearestNames near;
                char names[512] = "";
                size_t off = 0;
                bool known = false;

                nearest_names_init(&near, w);
                for (size_t i = 0; i < ELEMENTSOF(known_actions); i++) {
                        known = known || streq(w, known_actions[i]);
                        nearest_names_offer(&near, known_actions[i]);
                }
                if (known)
                        continue;
                for (size_t i = 0; i < (near.n ? near.n : ELEMENTSOF(known_actions)); i++)
                        off += (size_t) snprintf(names + off, sizeof(names) - MIN(off, sizeof(names)), "%s%s",
                                                 i ? ", " : "", near.n ? near.names[i] : known_actions[i]);
                return usage_error("invalid --action '%s': no event has that action; %s: %s", w,
                                   near.n ? "the nearest" : "the actions are", names);
        }
        return 0;
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
static bool name_matches(const char *want, const char *unit, const char *cgroup) {
        size_t n = strlen(want);

        if (want[0] == '/')
                return streq(want, cgroup);
        if (streq(want, unit))
                return true;
        return !strchr(want, '.') && strncmp(unit, want, n) == 0 && streq(unit + n, ".service");
}

static bool event_matches(const EventLine *e, const Args *a) {
        if (a->events_unit && !name_matches(a->events_unit, e->unit, e->cgroup))
                return false;
        if (a->events_action && !action_matches(a->events_action, e->action))
                return false;
        return !a->have_since || e->realtime_usec >= a->since_usec;
}

static void event_print(const EventLine *e, const Args *a, const EventLayout *l) {
        if (!a->json) {
                event_line_print(e, l);
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
        if (e->from_journal)
                fputs(",\"source\":\"journal\"", stdout);
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
        EventLayout layout;
        uint64_t last_seq, last_usec;   /* the last event seen, printed or not (its CLOCK_REALTIME) */
        uint64_t daemon_pid, daemon_started_usec;       /* the daemon followed, to tell a restart */
        uint64_t first_seq;             /* the oldest event it kept when asked */
        sd_id128_t boot;
        char *socket;                   /* the control socket it says it serves: its events' tag in the journal */
} Follow;

static int on_event(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(value_clear) Value v = {};
        Follow *f = userdata;
        EventLine e;

        if (value_read_all(m, &v) < 0 || !event_from_value(&v, &e) || e.seq <= f->last_seq)
                return 0;
        f->last_seq = e.seq;
        f->last_usec = e.realtime_usec;
        if (!event_matches(&e, f->args))
                return 0;
        event_print(&e, f->args, &f->layout);
        if (f->args->json)
                putchar('\n');
        fflush(stdout);
        return 0;
}

/* Who the daemon is (its pid and start time, the socket it serves) and the oldest event it keeps; silent. */
static int daemon_identity(sd_bus *bus, Follow *f) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(value_clear) Value st = {};
        const char *socket;
        int r = sd_bus_call_method(bus, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, "GetStatus", NULL, &reply, "");

        if (r >= 0)
                r = value_read(reply, &st);
        if (r < 0)
                return r;
        if (!value_get_u64(&st, "pid", &f->daemon_pid) ||
            !value_get_u64(&st, "started_realtime_usec", &f->daemon_started_usec) ||
            !value_get_u64(&st, "events_first_seq", &f->first_seq))
                return -EBADMSG;
        socket = value_get_str(&st, "control_socket");
        free(f->socket);
        f->socket = strdup(socket ?: f->args->socket);
        if (!f->socket)
                return -ENOMEM;
        return sd_id128_get_boot(&f->boot) < 0 ? (f->boot = SD_ID128_NULL, 0) : 0;
}

/* ---- the history in the journal ---- */

/* Which events of the journal to take: those the daemon's ring does not hold, and that match. */
typedef struct Keep {
        const Args *args;
        EventOrigin self;               /* the daemon now ... */
        uint64_t self_first;            /* ... whose events from this seq on are in its ring */
        bool resume;                    /* after a reconnection: only the events missed, below */
        EventOrigin old;                /* the daemon followed before (pid 0: none) ... */
        uint64_t old_after;             /* ... whose events up to this seq were seen */
        size_t old_found;               /* its events the journal has, seen or not */
        bool unit_seen;                 /* an event of --unit, whatever the other filters say */
} Keep;

static bool same_origin(const EventOrigin *a, const EventOrigin *b) {
        return a->pid == b->pid && sd_id128_equal(a->boot, b->boot);
}

static bool keep_event(const Value *v, const EventOrigin *o, void *userdata) {
        Keep *k = userdata;
        bool mine = same_origin(o, &k->self), old = k->resume && k->old.pid && same_origin(o, &k->old);
        EventLine e;

        if (!event_from_value(v, &e) || (mine && e.seq >= k->self_first))
                return false;
        k->old_found += old;
        if (k->resume && (old ? e.seq <= k->old_after : !mine))
                return false;
        if (k->args->events_unit && name_matches(k->args->events_unit, e.unit, e.cgroup))
                k->unit_seen = true;
        return event_matches(&e, k->args);
}

/* Reads the journal's events into *ret (an array), oldest first, each marked as the journal's. */
static int journal_read(const Follow *f, Keep *k, uint64_t since_usec, size_t max, Value *ret) {
        JournalQuery q = { .directory = f->args->journal_directory, .socket = f->socket, .since_usec = since_usec,
                           .max = max, .keep = keep_event, .userdata = k };
        bool more;
        int r;

        k->self = (EventOrigin) { f->daemon_pid, f->boot };
        k->self_first = f->first_seq;
        r = journal_events(&q, ret, &more);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ret->n; i++) {
                Value *mark;

                r = value_push(&ret->items[i], &mark);
                if (r < 0)
                        return client_fail("cannot read the journal", r);
                *mark = (Value) { .kind = VALUE_BOOL, .b = true };
        }
        if (more && !f->args->have_lines && !f->args->have_n)
                fprintf(stderr, "mdctl: more than %zu events in the journal match: the oldest are not shown\n", max);
        return 0;
}

/* Whether a and b are the same name but for their suffix ("db.socket", "db.service"). */
static bool same_stem(const char *a, const char *b) {
        const char *da = strrchr(a, '.'), *db = strrchr(b, '.');
        size_t na = da ? (size_t) (da - a) : strlen(a), nb = db ? (size_t) (db - b) : strlen(b);

        return na == nb && strncmp(a, b, na) == 0;
}

/* Offers a unit: the near ones by spelling, and those of the same name with another suffix. */
static void offer_unit(NearestNames *near, const char **stems, size_t *n_stems, const char *want, const char *unit) {
        nearest_names_offer(near, unit);
        for (size_t i = 0; i < *n_stems; i++)
                if (streq(stems[i], unit))
                        return;
        if (*n_stems < NEAREST_MAX && want[0] != '/' && same_stem(want, unit))
                stems[(*n_stems)++] = unit;
}

/* --unit names a cgroup watched, or one an event names; else says which are nearest (-ENOENT). */
static int check_unit(sd_bus *bus, const Args *a, const Value *ring, bool seen) {
        _cleanup_(value_clear) Value list = {};
        const char *want = a->events_unit, *stems[NEAREST_MAX];
        size_t n_stems = 0;
        NearestNames near;
        EventLine e;
        int r;

        for (size_t i = 0; !seen && i < ring->n; i++)
                seen = event_from_value(&ring->items[i], &e) && name_matches(want, e.unit, e.cgroup);
        if (seen)
                return 0;
        r = client_call(bus, "cannot check --unit", "ListCgroups", &list, "");
        if (r < 0)
                return r;
        nearest_names_init(&near, want);
        for (size_t i = 0; list.kind == VALUE_ARRAY && i < list.n; i++) {
                const char *unit = value_get_str(&list.items[i], "unit"), *path = value_get_str(&list.items[i], "path");

                if (name_matches(want, unit ?: "", path ?: ""))
                        return 0;
                if (want[0] == '/' ? path : unit)
                        offer_unit(&near, stems, &n_stems, want, want[0] == '/' ? path : unit);
        }
        for (size_t i = 0; want[0] != '/' && i < ring->n; i++)
                if (event_from_value(&ring->items[i], &e) && *e.unit)
                        offer_unit(&near, stems, &n_stems, want, e.unit);
        fprintf(stderr, "mdctl: no events of '%s', and no %s of that name is watched", want,
                want[0] == '/' ? "cgroup" : "unit");
        for (size_t i = 0; i < (near.n ? near.n : n_stems); i++)
                fprintf(stderr, "%s%s", i ? ", " : "; the nearest: ", near.n ? near.names[i] : stems[i]);
        fputc('\n', stderr);
        return -ENOENT;
}

/* ---- the backlog ---- */

/* How many of the events match the filters. */
static size_t count_matching(const Value *events, const Args *a) {
        size_t n = 0;
        EventLine e;

        for (size_t i = 0; i < events->n; i++)
                n += event_from_value(&events->items[i], &e) && event_matches(&e, a);
        return n;
}

/* The journal's events, then the ring's from `from` on, that match: the last --lines of them (but after
 * a reconnection); with `follow`, each as it is printed (JSON: one per line). */
static int print_backlog(const Value *journal, const Value *ring, const Args *a, Follow *f, bool resumed) {
        bool one_doc = a->json && !a->follow;
        size_t matching = count_matching(journal, a) + count_matching(ring, a), skip, n = 0;
        uint64_t lines = a->have_lines || a->have_n ? a->lines : a->have_since ? UINT64_MAX : EVENTS_DEFAULT_LINES;
        const Value *part[] = { journal, ring };
        EventLine e;

        skip = !resumed && lines < matching ? matching - lines : 0;
        if (one_doc)
                fputs("{\"events\":[", stdout);
        else if (!a->json && a->legend && !resumed)
                event_legend_print(&f->layout);
        for (size_t p = 0; p < ELEMENTSOF(part); p++)
                for (size_t i = 0; i < part[p]->n; i++) {
                        if (!event_from_value(&part[p]->items[i], &e))
                                return client_fail("cannot read the events", -EBADMSG);
                        if (p == 1) {
                                f->last_seq = e.seq;
                                f->last_usec = e.realtime_usec;
                        }
                        if (!event_matches(&e, a))
                                continue;
                        if (skip > 0) {
                                skip--;
                                continue;
                        }
                        if (one_doc && n++)
                                putchar(',');
                        event_print(&e, a, &f->layout);
                        if (a->json && !one_doc)
                                putchar('\n');
                }
        if (one_doc)
                fputs("]}\n", stdout);
        fflush(stdout);
        return 0;
}

static int list_ring(sd_bus *bus, uint64_t from, Value *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = client_call_raw(bus, "cannot list the events", "ListEventsWithFields", &reply, "t", from);
        if (r < 0)
                return r;
        r = value_read(reply, ret);
        if (r < 0 || ret->kind != VALUE_ARRAY)
                return client_fail("cannot read the events", r < 0 ? r : -EBADMSG);
        return 0;
}

/* The first backlog: the journal's history before what the ring keeps, then the ring. */
static int events_backlog(sd_bus *bus, const Args *a, Follow *f) {
        _cleanup_(value_clear) Value ring = {}, journal = {};
        Keep k = { .args = a };
        size_t max = a->have_lines || a->have_n ? a->lines : a->have_since ? EVENTS_JOURNAL_MAX : EVENTS_DEFAULT_LINES;
        int r;

        r = daemon_identity(bus, f);
        if (r < 0)
                return client_fail("cannot ask mdreclaimd who it is", r);
        r = list_ring(bus, 0, &ring);
        if (r < 0)
                return r;
        r = journal_read(f, &k, a->have_since ? a->since_usec : 0, max, &journal);
        if (r < 0)
                return r;
        if (a->events_unit && (r = check_unit(bus, a, &ring, k.unit_seen)) < 0)
                return r;
        return print_backlog(&journal, &ring, a, f, false);
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) {
        interrupted = 1;
}

/* ---- --follow, across restarts of the daemon ---- */

#define RECONNECT_FIRST_USEC (100 * USEC_PER_MSEC)
#define RECONNECT_MAX_USEC (5 * USEC_PER_SEC)
/* The journal is read back this far before the last event seen (its clock and the daemon's differ a little). */
#define RESUME_MARGIN_USEC USEC_PER_SEC

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

/* Says what came of a reconnection: the events missed, those the journal gave back. */
static void say_resumed(const Follow *f, bool restarted, const Keep *k, size_t from_journal, uint64_t missed) {
        fprintf(stderr, "mdctl: reconnected to %s after %s; %" PRIu64 " event%s may have been missed%s\n",
                f->args->socket, restarted ? "a restart of mdreclaimd" : "the connection was lost", missed,
                missed == 1 ? "" : "s",
                /* Not a count: how many the stopped daemon recorded unseen, only the journal could tell. */
                restarted && k->old_found == 0 ? ", and any the stopped daemon recorded after the last one shown "
                "(its restores at stop among them): the journal does not hold its events" : "");
        if (from_journal > 0)
                fprintf(stderr, "mdctl: %zu event%s not seen read from the journal\n", from_journal,
                        from_journal == 1 ? "" : "s");
}

/* Connected again: subscribed, the events missed read from the journal, said so, then the events kept that
 * were not seen. */
static int resume(sd_bus *bus, Follow *f) {
        _cleanup_(value_clear) Value ring = {}, journal = {};
        Keep k = { .args = f->args, .resume = true, .old = { f->daemon_pid, f->boot }, .old_after = f->last_seq };
        uint64_t pid = f->daemon_pid, started = f->daemon_started_usec, from, missed;
        bool restarted;
        int r;

        r = subscribe(bus, f);
        if (r >= 0)
                r = daemon_identity(bus, f);
        if (r < 0)
                return r;
        restarted = pid != f->daemon_pid || started != f->daemon_started_usec;
        r = journal_read(f, &k, f->last_usec > RESUME_MARGIN_USEC ? f->last_usec - RESUME_MARGIN_USEC : 0,
                         EVENTS_JOURNAL_MAX, &journal);
        if (r < 0)
                return r;
        /* A new daemon counts from 1 again; the same one goes on from the last seen. */
        from = restarted ? 1 : f->last_seq + 1;
        missed = f->first_seq > from ? f->first_seq - from : 0;
        for (size_t i = 0; i < journal.n; i++) {
                EventLine e;

                missed -= missed > 0 && event_from_value(&journal.items[i], &e) && e.seq >= from &&
                          e.seq < f->first_seq && (restarted || e.seq > f->last_seq);
        }
        say_resumed(f, restarted, &k, journal.n, missed);
        if (restarted)
                f->last_seq = 0;
        r = list_ring(bus, from, &ring);
        if (r < 0)
                return r;
        return print_backlog(&journal, &ring, f->args, f, true);
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

int check_events_args(const Args *a) {
        return a->events_action ? check_actions(a->events_action) : 0;
}

int verb_events(sd_bus *bus, const Args *a) {
        Follow f = { .args = a, .layout = event_layout(a->legend), .last_usec = now_usec(CLOCK_REALTIME) };
        int r;

        if (a->follow) {
                struct sigaction sa = { .sa_handler = on_interrupt };

                /* Before anything is printed: an interrupt after the first line ends the stream cleanly. */
                sigaction(SIGINT, &sa, NULL);
                sigaction(SIGTERM, &sa, NULL);
                r = subscribe(bus, &f);
                if (r < 0) {
                        free(f.socket);
                        return client_fail("cannot follow the events", r);
                }
        }
        r = events_backlog(bus, a, &f);
        if (r >= 0 && a->follow)
                r = events_follow(bus, &f);
        free(f.socket);
        return r;
}
