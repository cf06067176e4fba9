/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An event of `mdctl events` as people read it: the figures of a throttle
 * in MiB/s and MiB rather than bytes, a device by its name beside MAJ:MIN
 * (and none where there is no device), the unit rather than its cgroup's
 * path; one line of TIME, ACTION and MESSAGE fitted to the terminal's width,
 * the message wrapped under itself.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus-value.h"

/* The longest message printed for people. */
#define EVENT_TEXT_BUF 1024

/* An event as the daemon sends it: (seq, realtime_usec, priority, action, cgroup, unit, message, fields). */
typedef struct EventLine {
        uint64_t seq, realtime_usec;
        int64_t priority;
        const char *action, *cgroup, *unit, *message;
        const Value *fields;            /* an object; NULL if the daemon sent none */
        bool from_journal;
} EventLine;

/* An event of ListEventsWithFields' shape, or false. */
bool event_from_value(const Value *v, EventLine *ret);

const char *priority_name(int64_t p);

/* A device's name from /sys/dev/block ("vda"), into buf; NULL: not known on this host. */
const char *device_name(char *buf, size_t size, const char *maj_min);

/* The event's message for people, into buf. */
const char *event_text(char *buf, size_t size, const EventLine *e);

typedef struct EventLayout {
        size_t width;                   /* 0: unlimited (nothing wrapped) */
        bool legend;
} EventLayout;

/* The layout for stdout: the terminal's width ($COLUMNS first), else unlimited. */
EventLayout event_layout(bool legend);
void event_legend_print(const EventLayout *l);
void event_line_print(const EventLine *e, const EventLayout *l);
