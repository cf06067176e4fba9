/* SPDX-License-Identifier: GPL-2.0-or-later */
/* events [--follow]: the backlog, then the Event signal. */
#include "mdctl.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "json-out.h"
#include "util.h"

/* ---- events ---- */

static const char *priority_name(int32_t p) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        return p >= 0 && p < 8 ? names[p] : "?";
}

typedef struct EventLine {
        uint64_t seq, realtime_usec;
        int32_t priority;
        const char *action, *cgroup, *unit, *message;
} EventLine;

static void event_print(const EventLine *e, bool json) {
        char when[32];

        if (!json) {
                printf("%s  %-7s  %-16s  %s\n", format_time(when, e->realtime_usec), priority_name(e->priority),
                       e->action, e->message);
                return;
        }
        printf("{\"seq\":%" PRIu64 ",\"realtime_usec\":%" PRIu64 ",\"priority\":%" PRId32 ",\"priority_name\":\"%s\""
               ",\"action\":", e->seq, e->realtime_usec, e->priority, priority_name(e->priority));
        json_string(stdout, e->action);
        fputs(",\"cgroup\":", stdout);
        json_string_or_null(stdout, *e->cgroup ? e->cgroup : NULL);
        fputs(",\"unit\":", stdout);
        json_string_or_null(stdout, *e->unit ? e->unit : NULL);
        fputs(",\"message\":", stdout);
        json_string(stdout, e->message);
        fputc('}', stdout);
}

static int event_read(sd_bus_message *m, EventLine *e) {
        return sd_bus_message_read(m, "ttissss", &e->seq, &e->realtime_usec, &e->priority, &e->action,
                                   &e->cgroup, &e->unit, &e->message);
}

typedef struct Follow {
        const Args *args;
        uint64_t last_seq;
} Follow;

static int on_event(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Follow *f = userdata;
        EventLine e;

        if (event_read(m, &e) <= 0 || e.seq <= f->last_seq)
                return 0;
        f->last_seq = e.seq;
        event_print(&e, f->args->json);
        if (f->args->json)
                putchar('\n');
        fflush(stdout);
        return 0;
}

/* The events kept now; with `follow`, each as it is printed (JSON: one per line). */
static int events_backlog(sd_bus *bus, const Args *a, Follow *f) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        bool one_doc = a->json && !a->follow;
        EventLine e;
        size_t n = 0;
        int r;

        r = client_call_raw(bus, "cannot list the events", "ListEvents", &reply, "t", UINT64_C(0));
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ttissss)");
        if (r < 0)
                return client_fail("cannot read the events", r);
        if (one_doc)
                fputs("{\"events\":[", stdout);
        else if (!a->json && a->legend)
                printf("%-19s  %-7s  %-16s  %s\n", "TIME", "PRIORITY", "ACTION", "MESSAGE");
        while ((r = sd_bus_message_enter_container(reply, 'r', "ttissss")) > 0) {
                if (event_read(reply, &e) < 0 || sd_bus_message_exit_container(reply) < 0)
                        return client_fail("cannot read the events", -EBADMSG);
                if (one_doc && n)
                        putchar(',');
                event_print(&e, a->json);
                if (a->json && !one_doc)
                        putchar('\n');
                f->last_seq = e.seq;
                n++;
        }
        if (one_doc)
                fputs("]}\n", stdout);
        fflush(stdout);
        return r < 0 ? client_fail("cannot read the events", r) : 0;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) {
        interrupted = 1;
}

static int events_follow(sd_bus *bus) {
        while (!interrupted) {
                int r = sd_bus_process(bus, NULL);

                if (r < 0)
                        return client_fail("following the events stopped", r);
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        return client_fail("following the events stopped", r);
        }
        return 0;
}

int verb_events(sd_bus *bus, const Args *a) {
        Follow f = { .args = a };
        int r;

        if (a->follow) {
                struct sigaction sa = { .sa_handler = on_interrupt };

                /* Before anything is printed: an interrupt after the first line ends the stream cleanly. */
                sigaction(SIGINT, &sa, NULL);
                sigaction(SIGTERM, &sa, NULL);
                /* Subscribe first, so that nothing falls between the backlog and the stream. */
                r = sd_bus_match_signal(bus, NULL, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, "Event", on_event, &f);
                if (r < 0)
                        return client_fail("cannot watch the events", r);
                r = client_call(bus, "cannot subscribe to the events", "Subscribe", NULL, "");
                if (r < 0)
                        return r;
        }
        r = events_backlog(bus, a, &f);
        if (r < 0 || !a->follow)
                return r;
        return events_follow(bus);
}
