/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging: lines on stderr with the "<N>" syslog priority prefix that journald
 * understands, a level filter, rate limiting for messages that could repeat
 * every tick, and log_event() for the structured events an operator queries.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

void log_set_max_level(int level);

/* Returns -abs(error) when error != 0, else 0, so callers can "return log_...". */
int log_internal(int level, int error, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

#define log_full_errno(level, error, ...) log_internal((level), (error), __VA_ARGS__)
#define log_debug(...)   log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)    log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)  log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)   log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...)   log_internal(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...)    log_internal(LOG_INFO, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...)   log_internal(LOG_ERR, (e), __VA_ARGS__)

/* Parses "emerg".."debug" or "0".."7". Returns the level or -EINVAL. */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);

/*
 * A limit of `burst` messages per `interval_usec`; the first message after a
 * suppressed run says how many were dropped.
 */
typedef struct RateLimit {
        uint64_t interval_usec;
        unsigned burst;
        uint64_t begin_usec;
        unsigned count;
        unsigned suppressed;
} RateLimit;

#define RATELIMIT_INIT(interval, b) { .interval_usec = (interval), .burst = (b) }

/* True if a message may be logged now; *ret_suppressed is what was dropped before. */
bool ratelimit_below(RateLimit *rl, uint64_t now_usec, unsigned *ret_suppressed);

/*
 * One structured event. Under journald (JOURNAL_STREAM names our stderr) it is
 * sent with sd_journal_send() carrying MESSAGE_ID, CGROUP, UNIT, ACTION and the
 * extra "KEY=value" fields given in `fields` (NULL-terminated, may be NULL);
 * otherwise it is one stderr line with the fields appended.
 */
typedef struct LogEvent {
        int level;
        const char *message_id;   /* 32 hex digits, no dashes */
        const char *cgroup;
        const char *unit;
        const char *action;
        const char *const *fields;
} LogEvent;

void log_event(const LogEvent *ev, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

/* Whether stderr is connected to journald (JOURNAL_STREAM matches fd 2). */
bool log_stderr_is_journal(void);
