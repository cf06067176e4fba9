/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's recent structured events (every decision and action), kept
 * in a bounded ring so that operators can list them (mdctl events) without
 * the journal; counted by action. The journal keeps the full history.
 */
#pragma once

#include <stdint.h>

#define EVENT_LOG_SIZE 512
#define EVENT_TEXT_MAX 256

typedef struct Event {
        uint64_t seq;                   /* 1, 2, ...: never reused */
        uint64_t realtime_usec;         /* CLOCK_REALTIME */
        int level;
        char action[32];
        char cgroup[EVENT_TEXT_MAX];
        char unit[128];
        char message[EVENT_TEXT_MAX];
} Event;

typedef struct EventLog {
        Event ring[EVENT_LOG_SIZE];
        uint64_t next_seq;              /* seq of the next event, from 1 */
} EventLog;

void event_log_init(EventLog *l);

/* Appends an event (strings may be NULL; longer ones are cut) and returns it. */
const Event *event_log_add(EventLog *l, uint64_t realtime_usec, int level, const char *action,
                           const char *cgroup, const char *unit, const char *message);

/* The event with sequence number `seq`, or NULL if not (or no longer) kept. */
const Event *event_log_get(const EventLog *l, uint64_t seq);

/* Sequence number of the oldest event kept (next_seq if empty). */
uint64_t event_log_first(const EventLog *l);
