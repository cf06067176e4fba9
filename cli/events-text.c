/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "events-text.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mdctl.h"
#include "table.h"
#include "util.h"

/* Below this width the PRIORITY column goes (a warning or worse says so in its message). */
#define EVENTS_WIDE 100
#define TIME_WIDTH 19
#define PRIORITY_WIDTH 8
#define ACTION_WIDTH 16

bool event_from_value(const Value *v, EventLine *ret) {
        const Value *it = v->items;

        if (v->kind != VALUE_ARRAY || v->n < 7 || it[0].kind != VALUE_UINT || it[1].kind != VALUE_UINT ||
            it[2].kind != VALUE_INT || it[3].kind != VALUE_STRING || it[4].kind != VALUE_STRING ||
            it[5].kind != VALUE_STRING || it[6].kind != VALUE_STRING)
                return false;
        *ret = (EventLine) { it[0].u, it[1].u, it[2].i, it[3].s, it[4].s, it[5].s, it[6].s,
                             v->n > 7 && it[7].kind == VALUE_OBJECT ? &it[7] : NULL, v->n > 8 };
        return true;
}

const char *priority_name(int64_t p) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        return p >= 0 && p < 8 ? names[p] : "?";
}

const char *device_name(char *buf, size_t size, const char *maj_min) {
        char path[64], target[PATH_MAX];
        const char *slash;
        ssize_t n;

        if (!maj_min || strchr(maj_min, '/') || streq(maj_min, "0:0"))
                return NULL;
        snprintf(path, sizeof(path), "/sys/dev/block/%s", maj_min);
        n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0)
                return NULL;
        target[n] = '\0';
        slash = strrchr(target, '/');
        snprintf(buf, size, "%s", slash ? slash + 1 : target);
        return buf;
}

/* "vda (254:0)", "254:0" where the name is not known; NULL: no device (0:0, or none given). */
static const char *device_text(char buf[static 96], const EventLine *e) {
        const char *dev = e->fields ? value_get_str(e->fields, "device") : NULL;
        char name[64];

        if (!dev || !*dev || streq(dev, "0:0"))
                return NULL;
        if (device_name(name, sizeof(name), dev))
                snprintf(buf, 96, "%s (%s)", name, dev);
        else
                snprintf(buf, 96, "%s", dev);
        return buf;
}

typedef enum Unit { UNIT_PLAIN, UNIT_BYTES, UNIT_RATE } Unit;

/* A knob's value: "max", "12.5 MiB/s", "512.0 MiB", "64". */
static const char *figure_text(char buf[static 32], const Value *v, Unit unit) {
        if (!v)
                return "?";
        if (v->kind == VALUE_STRING)
                return v->s;
        if (v->kind != VALUE_UINT)
                return "?";
        if (unit == UNIT_PLAIN)
                snprintf(buf, 32, "%" PRIu64, v->u);
        else
                snprintf(buf, 32, "%.1f MiB%s", (double) v->u / (1 << 20), unit == UNIT_RATE ? "/s" : "");
        return buf;
}

static Unit knob_unit(const char *knob) {
        if (strstr(knob, "wbps"))
                return UNIT_RATE;
        return strncmp(knob, "memory.", 7) == 0 ? UNIT_BYTES : UNIT_PLAIN;
}

/* The value an observed decision names, by what it decides. */
static Unit action_unit(const char *action) {
        if (streq(action, "cap-writes") || streq(action, "lift-cap"))
                return UNIT_RATE;
        return strstr(action, "queue") ? UNIT_PLAIN : UNIT_BYTES;
}

/* Who the event is about: its cgroup (as the daemon names it), else its device. */
static const char *who(const EventLine *e, const char *dev) {
        return *e->cgroup ? e->cgroup : dev ? dev : "";
}

/* A throttle set, stepped, lifted, restored:
 * "/system.slice/writer.service: io.max wbps on vda (254:0): 62.8 MiB/s -> 54.0 MiB/s (why)". */
static bool throttle_text(char *buf, size_t size, const EventLine *e) {
        const char *knob = value_get_str(e->fields, "knob"), *reason = value_get_str(e->fields, "reason");
        const Value *before = value_get(e->fields, "before"), *after = value_get(e->fields, "after");
        char dev[96], b[32], a[32];
        const char *d;
        Unit unit;

        if (!knob || !before || !after)
                return false;
        unit = knob_unit(knob);
        d = device_text(dev, e);
        snprintf(buf, size, "%s: %s%s%s: %s -> %s%s%s%s", who(e, d), knob, d && *e->cgroup ? " on " : "",
                 d && *e->cgroup ? d : "", figure_text(b, before, unit), figure_text(a, after, unit),
                 reason ? " (" : "", reason ?: "", reason ? ")" : "");
        return true;
}

/* A decision not taken (observe): "/system.slice/writer.service: would cap-writes 54.0 MiB/s on vda (254:0): why". */
static bool observed_text(char *buf, size_t size, const EventLine *e) {
        const Value *value = value_get(e->fields, "value");
        const char *reason = value_get_str(e->fields, "reason");
        char dev[96], v[32];
        const char *d;

        if (!value_is_true(e->fields, "observe") || !value || value_get_str(e->fields, "knob"))
                return false;
        d = device_text(dev, e);
        snprintf(buf, size, "%s: would %s %s%s%s%s%s", who(e, d), e->action, figure_text(v, value, action_unit(e->action)),
                 d ? " on " : "", d ?: "", reason ? ": " : "", reason ?: "");
        return true;
}

const char *event_text(char *buf, size_t size, const EventLine *e) {
        if (e->fields && (throttle_text(buf, size, e) || observed_text(buf, size, e)))
                return buf;
        /* Any other: the daemon's words. */
        snprintf(buf, size, "%s", e->message);
        return buf;
}

EventLayout event_layout(bool legend) {
        return (EventLayout) { .width = table_output_width(), .legend = legend };
}

static bool wide(const EventLayout *l) {
        return l->width == 0 || l->width >= EVENTS_WIDE;
}

void event_legend_print(const EventLayout *l) {
        if (wide(l))
                printf("%-*s  %-*s  %-*s  %s\n", TIME_WIDTH, "TIME", PRIORITY_WIDTH, "PRIORITY", ACTION_WIDTH, "ACTION",
                       "MESSAGE");
        else
                printf("%-*s  %-*s  %s\n", TIME_WIDTH, "TIME", ACTION_WIDTH, "ACTION", "MESSAGE");
}

/* `text` from column `col` on, broken at spaces before `width`, each further line indented to `indent`. */
static void print_wrapped(const char *text, size_t col, size_t indent, size_t width) {
        if (width == 0 || indent + 20 > width)
                indent = width == 0 ? 0 : 2;
        if (!*text)
                putchar('\n');
        if (width > 0 && *text && col + 10 > width) {
                /* No room left on the first line: the message starts below. */
                printf("\n%*s", (int) indent, "");
                col = indent;
        }
        while (*text) {
                size_t room = width > col ? width - col : 1, n = strlen(text), cut = n;

                if (width > 0 && n > room) {
                        cut = room;
                        while (cut > 0 && text[cut] != ' ')
                                cut--;
                        if (cut == 0)
                                cut = room;     /* one word longer than the room: cut */
                }
                printf("%.*s\n", (int) cut, text);
                text += cut;
                text += strspn(text, " ");
                if (*text)
                        printf("%*s", (int) indent, "");
                col = indent;
        }
}

void event_line_print(const EventLine *e, const EventLayout *l) {
        char when[32], text[EVENT_TEXT_BUF + 16];
        size_t off = 0;
        int col;

        format_time(when, e->realtime_usec);
        if (wide(l))
                col = printf("%-*s  %-*s  %-*s  ", TIME_WIDTH, when, PRIORITY_WIDTH, priority_name(e->priority),
                             ACTION_WIDTH, e->action);
        else {
                col = printf("%-*s  %-*s  ", TIME_WIDTH, when, ACTION_WIDTH, e->action);
                /* Without the PRIORITY column, a warning or worse says so. */
                if (e->priority <= 4)
                        off = (size_t) snprintf(text, 16, "%s: ", priority_name(e->priority));
        }
        event_text(text + off, sizeof(text) - off, e);
        print_wrapped(text, col < 0 ? 0 : (size_t) col,
                      wide(l) ? TIME_WIDTH + PRIORITY_WIDTH + ACTION_WIDTH + 6 : TIME_WIDTH + ACTION_WIDTH + 4,
                      l->width);
}
