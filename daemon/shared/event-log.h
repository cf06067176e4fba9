/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's structured events (every decision and action): each is logged
 * (journal fields, or one stderr line), kept in a bounded ring so that
 * operators can list recent ones without the journal (mdctl events), and
 * handed to one hook (the control API turns it into a signal). Also the
 * rate-limited warning for an action that failed. Nothing here knows the
 * event loop: callers pass the time.
 */
#pragma once

#include <stdint.h>

#include "log.h"

#define EVENT_LOG_SIZE 512
#define EVENT_TEXT_MAX 256
#define EVENT_FIELDS_MAX 512

#define EVENT_UNIT_MAX 128

/*
 * An event as the ring keeps it. Its strings live in one block of their
 * own, as long as they are (a full ring of 512 was 0.6 MB of fixed-size
 * text, most of it empty): cgroup and message hold up to EVENT_TEXT_MAX - 1
 * bytes, unit EVENT_UNIT_MAX - 1, the fields EVENT_FIELDS_MAX in all.
 */
typedef struct Event {
        uint64_t seq;                   /* 1, 2, ...: never reused */
        uint64_t realtime_usec;         /* CLOCK_REALTIME */
        int level;
        char action[32];
        const char *cgroup, *unit, *message;    /* never NULL ("" for none) */
        /* The event's own journal fields ("KEY=value", escaped as names are), each ended by a NUL,
         * the last followed by an empty one; a field that does not fit is left out whole. */
        const char *fields;
        char *text;                     /* the block the four point into; NULL: they are static */
} Event;

/* Called for every event recorded, after it is in the ring. */
typedef void (*EventHook)(const Event *e, void *userdata);

/*
 * Every action an event carries: what `mdctl events --action` takes
 * (tests/unit/check-event-actions.py finds each one the daemon records here,
 * and in the man page).
 */
#define EVENT_ACTIONS                                                                                   \
        "attach-policy", "pressure", "policy-change", "reclaim", "writeback", "cap-writes", "drain-cap", \
        "lift-cap", "dirty-budget", "lift-dirty-budget", "throttle-allocations",                        \
        "lift-allocation-throttle", "restore-memory-high", "defer-for-swap", "hold-swap",               \
        "restore-swap-max", "shallow-queue", "restore-queue", "queue-refused", "foreign-change",        \
        "restore-on-stop", "restore-after-restart", "cgroup-gone", "release", "release-ended"

/*
 * The journal fields that tell one daemon's events from another's: the seq
 * of the event in its daemon's ring, and the control socket it serves, so
 * that `mdctl events` reads back the history of the daemon it talks to and
 * leaves out what its ring still holds (the journal's own _PID and _BOOT_ID
 * tell the daemons apart).
 */
#define EVENT_FIELD_SEQ "EVENT_SEQ"
#define EVENT_FIELD_SOCKET "CONTROL_SOCKET"

typedef struct EventLog {
        uint64_t next_seq;              /* seq of the next event, from 1 */
        const char *socket;             /* the control socket, for the journal; NULL: none (the caller's) */
        EventHook hook;
        void *hook_userdata;
        RateLimit failures;             /* warnings about failed actions */
        uint64_t cleared_seq;           /* events before this one were cleared */
        Event ring[EVENT_LOG_SIZE];
} EventLog;

/* Zeroes the ring once (the caller's storage may be uninitialised); event_log_clear() frees what it holds. */
void event_log_init(EventLog *l);
/* Frees the events' text (the log is empty again, its sequence numbers go on). */
void event_log_clear(EventLog *l);
/* A log on the heap, from calloc and not zeroed again. NULL: out of memory. */
EventLog *event_log_new(void);
EventLog *event_log_free(EventLog *l);

/* Appends an event (strings may be NULL; cgroup, unit and message are kept in the escaped form of
 * names, name-escape.h, and cut at a character's end when too long; `fields`, NULL-terminated
 * "KEY=value" strings, may be NULL) and returns it. */
const Event *event_log_add(EventLog *l, uint64_t realtime_usec, int level, const char *action,
                           const char *cgroup, const char *unit, const char *message,
                           const char *const *fields);

/* Iterates an event's fields: `*cursor` starts as NULL; the next "KEY=value", or NULL after the last. */
const char *event_next_field(const Event *e, const char **cursor);

/* The event with sequence number `seq`, or NULL if not (or no longer) kept. */
const Event *event_log_get(const EventLog *l, uint64_t seq);

/* Sequence number of the oldest event kept (next_seq if empty). */
uint64_t event_log_first(const EventLog *l);

/* Records a structured event: logged, kept in the ring (stamped CLOCK_REALTIME now), handed to the hook. */
void event_record(EventLog *l, const LogEvent *ev, const char *format, ...) __attribute__((format(printf, 3, 4)));

/*
 * A point's action failed (EACCES in a delegated subtree, a write the kernel
 * refused): warned about at most ten times a minute. `now` is CLOCK_MONOTONIC µs.
 */
void event_action_failed(EventLog *l, uint64_t now, int error, const char *path, const char *action);
