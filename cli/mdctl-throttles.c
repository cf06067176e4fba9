/* SPDX-License-Identifier: GPL-2.0-or-later */
/* throttles, release, and the throttles `show` lists for one cgroup. */
#include "mdctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-view.h"
#include "client.h"
#include "table.h"
#include "util.h"

/* The unit, else the path; "(every cgroup)" for a release of all. */
static const char *cgroup_cell(const Value *t) {
        const char *name = value_get_str(t, "unit") ?: value_get_str(t, "path");

        return name && streq(name, "*") ? "(every cgroup)" : name;
}

static bool is_io(const Value *t) {
        return streq_ptr(value_get_str(t, "knob"), "io.max wbps");
}

/* A device queue's knob (ManageQueueDepth=): plain numbers, as sysfs has them. */
static bool is_queue(const Value *t) {
        const char *knob = value_get_str(t, "knob");

        return streq_ptr(knob, "nr_requests") || streq_ptr(knob, "max_sectors_kb");
}

/* What the throttle replaced: "max", "1.0G", "12.0M/s", "256". */
static const char *original_cell(char buf[static 32], const Value *t) {
        uint64_t v;

        if (is_queue(t) && value_get_u64(t, "original", &v)) {
                snprintf(buf, 32, "%" PRIu64, v);
                return buf;
        }
        if (!value_get_str(t, "knob") || !cell_size(buf, t, "original"))
                return NULL;
        if (is_io(t) && !streq(buf, "max"))
                strcat(buf, "/s");
        return buf;
}

/* "write", "alloc", "both"; NULL when no point asks (a lift on its way). */
static const char *points_cell(const Value *t) {
        const Value *p = value_get(t, "points");

        if (!p || p->kind != VALUE_ARRAY || p->n == 0)
                return NULL;
        if (p->n > 1)
                return "both";
        return streq_ptr(p->items[0].s, "allocation") ? "alloc" : p->items[0].s;
}

static const char *throttle_cell(char buf[static 48], const Value *t) {
        char until[32];

        if (cell_throttle(buf, t, true))
                return buf;
        snprintf(buf, 48, "released to %s", or_dash(cell_time(until, t, "released_until_usec")));
        return buf;
}

/* ---- throttles ---- */

static int compare(const void *x, const void *y) {
        const Value *a = x, *b = y;
        int c = strcmp(value_get_str(a, "path") ?: "", value_get_str(b, "path") ?: "");

        if (c == 0)
                c = strcmp(value_get_str(a, "knob") ?: "", value_get_str(b, "knob") ?: "");
        return c ?: strcmp(value_get_str(a, "device") ?: "", value_get_str(b, "device") ?: "");
}

const char *const throttle_columns[] = { "/CGROUP", "THROTTLE", "2WAS", "1POINT", "SINCE", NULL };

static int throttles_table(const Value *list, Table *ret) {
        int r = 0;

        table_init(ret, throttle_columns);
        for (size_t i = 0; r >= 0 && i < list->n; i++) {
                const Value *t = &list->items[i];
                char thr[48], was[32], since[32];
                const char *cells[] = { cgroup_cell(t), throttle_cell(thr, t), original_cell(was, t),
                                        points_cell(t), cell_time(since, t, "since_realtime_usec") };

                r = table_add_row(ret, cells);
        }
        return r;
}

static void throttles_legend(const Value *list) {
        size_t releases = 0;

        for (size_t i = 0; i < list->n; i++)
                releases += !value_get_str(&list->items[i], "knob");
        printf("\n%zu throttle%s", list->n - releases, list->n - releases == 1 ? "" : "s");
        if (releases)
                printf(", %zu release%s", releases, releases == 1 ? "" : "s");
        printf(". 'mdctl show UNIT' says why and what lifts each.\n");
}

int verb_throttles(sd_bus *bus, const Args *a) {
        Value list = {};
        Table t = {};
        int r = client_call(bus, "cannot list the throttles", "ListThrottles", &list, "");

        if (r < 0)
                return r;
        if (list.kind == VALUE_ARRAY && list.n > 1)
                qsort(list.items, list.n, sizeof(Value), compare);
        if (a->json) {
                fputs("{\"throttles\":", stdout);
                value_json(&list, stdout);
                fputs("}\n", stdout);
        } else if ((r = throttles_table(&list, &t)) < 0)
                r = client_fail("cannot build the table", r);
        else if ((r = print_table(&t, a)) >= 0 && a->legend)
                throttles_legend(&list);
        table_clear(&t);
        value_clear(&list);
        return r < 0 ? r : 0;
}

/* ---- show ---- */

/* The throttle's reason for people: its figures humanized, its device named beside MAJ:MIN ("on vda (8:0)"). */
static const char *named_devices(char *buf, size_t size, const Value *t) {
        const char *dev = value_get_str(t, "device"), *name = value_get_str(t, "device_name"), *p, *s;
        char human[600], label[64];
        size_t off = 0, n = dev ? strlen(dev) : 0;

        s = text_humanize(human, sizeof(human), value_get_str(t, "reason"));
        if (!dev || !name || streq(dev, name)) {
                snprintf(buf, size, "%s", s);
                return buf;
        }
        snprintf(label, sizeof(label), "%s (%s)", name, dev);
        buf[0] = '\0';
        /* " 8:0" as a word of its own: " 18:0" and "8:01" are other devices. */
        while ((p = strstr(s, dev)) && off < size) {
                bool word = p > s ? p[-1] == ' ' : false;
                word = word && (p[n] == '\0' || p[n] == ' ' || p[n] == ',' || p[n] == ')' || p[n] == ':');
                off += (size_t) snprintf(buf + off, size - off, "%.*s%s", (int) (p - s), s, word ? label : dev);
                s = p + n;
        }
        if (off < size)
                snprintf(buf + off, size - off, "%s", s);
        return buf;
}

/* "io.max wbps=12.0 MiB/s on vda (8:0)" or "memory.high=88.0M", and what it replaced. */
static void show_throttle(const Value *t) {
        char v[32], was[32], when[32], ago[32], until[32], dev[64], text[700];
        const char *points = points_cell(t);
        uint64_t since = 0, released = 0, wbps = 0;

        (void) cell_size(v, t, "value");
        (void) original_cell(was, t);
        if (is_io(t) && value_get_u64(t, "value", &wbps))
                text_rate(v, wbps);
        if (is_io(t))
                field("Throttle", "io.max wbps=%s on %s (was %s)", v, or_dash(text_device(dev, t)), was);
        else
                field("Throttle", "memory.high=%s (was %s)", v, was);
        if (value_get_u64(t, "since_realtime_usec", &since))
                field("Since", "%s (%s ago), set by %s", format_time(when, since),
                      format_span(ago, u64_delta(now_usec(CLOCK_REALTIME), since)),
                      !points ? "nobody now: being lifted" : streq(points, "both") ? "both points" :
                      streq(points, "write") ? "the write point" : "the allocation point");
        field("Why", "%s", or_dash(value_get_str(t, "reason") ? named_devices(text, sizeof(text), t) : NULL));
        field("Lifts", "%s", or_dash(value_get_str(t, "lifts_when")));
        if (value_get_u64(t, "released_until_usec", &released))
                field("Released", "until %s; being lifted", format_time(until, released));
}

static void show_release(const Value *t) {
        char until[32], left[32];
        uint64_t released = 0;

        (void) value_get_u64(t, "released_until_usec", &released);
        field("Released", "by %s until %s (%s left): no throttle before", or_dash(value_get_str(t, "released_by")),
              format_time(until, released), format_span(left, u64_delta(released, now_usec(CLOCK_REALTIME))));
}

void show_throttles(const Value *c, const Value *throttles) {
        const char *path = value_get_str(c, "path");
        size_t n = 0;

        for (size_t i = 0; path && i < throttles->n; i++) {
                const Value *t = &throttles->items[i];
                const char *p = value_get_str(t, "path");

                if (!streq_ptr(p, path) && !streq_ptr(p, "*"))
                        continue;
                n++;
                if (value_get_str(t, "knob"))
                        show_throttle(t);
                else
                        show_release(t);
        }
        if (n == 0)
                field("Throttles", "none");
}

/* ---- release ---- */

int check_release_args(const Args *a) {
        if (a->end && a->have_for)
                return usage_error("release --end ends a release now; --for does not go with it");
        if (a->all && a->argc > 1)
                return usage_error("release takes a unit or cgroup path, or --all, not both");
        if (!a->all && a->argc < 2)
                return usage_error("release needs a unit or cgroup path, or --all");
        return 0;
}

int verb_release(sd_bus *bus, const Args *a) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *target = client_name_arg(a->all ? "" : a->argv[1]);
        char what[300];
        int r;

        if (!target)
                return client_fail("cannot release", -ENOMEM);
        snprintf(what, sizeof(what), "cannot %s %s", a->end ? "end the release of" : "release",
                 a->all ? "every cgroup" : target);
        if (a->end)
                r = client_call_raw(bus, what, "EndRelease", &reply, "s", target);
        else
                r = client_call_raw(bus, what, "Release", &reply, "st", target,
                                    a->have_for ? a->for_usec : UINT64_C(0));
        return r < 0 ? r : print_result(reply, a);
}
