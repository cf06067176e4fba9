/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "event-log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name-escape.h"
#include "util.h"

/* What an empty log holds besides zeroes. */
static void event_log_start(EventLog *l) {
        l->next_seq = 1;
        l->failures = (RateLimit) RATELIMIT_INIT(60 * USEC_PER_SEC, 10);
        for (size_t i = 0; i < EVENT_LOG_SIZE; i++)
                l->ring[i].cgroup = l->ring[i].unit = l->ring[i].message = l->ring[i].fields = "";
}

void event_log_init(EventLog *l) {
        memset(l, 0, sizeof(*l));
        event_log_start(l);
}

EventLog *event_log_new(void) {
        EventLog *l = calloc(1, sizeof(EventLog));

        if (l)
                event_log_start(l);
        return l;
}

static void event_free_text(Event *e) {
        free(e->text);
        e->text = NULL;
        e->cgroup = e->unit = e->message = e->fields = "";
}

void event_log_clear(EventLog *l) {
        for (size_t i = 0; i < EVENT_LOG_SIZE; i++)
                event_free_text(&l->ring[i]);
        /* Nothing is kept now: the first kept is the next. */
        l->cleared_seq = l->next_seq;
}

EventLog *event_log_free(EventLog *l) {
        if (l) {
                event_log_clear(l);
                free(l);
        }
        return NULL;
}

/* In the escaped form of names (the ring is what the control API sends), cut at a character's end. */
static void copy(char *dst, size_t size, const char *src) {
        name_escape_into(dst, size, src ? src : "");
}

/* Each field escaped, NUL-ended, as many whole ones as fit; an empty string closes the list. */
static void copy_fields(char *dst, size_t size, const char *const *fields) {
        size_t off = 0;

        for (size_t i = 0; fields && fields[i]; i++) {
                _cleanup_free_ char *escaped = name_escape(fields[i]);
                size_t n;

                if (!escaped)
                        break;
                n = strlen(escaped);
                if (n == 0 || !strchr(escaped, '=') || off + n + 2 > size)
                        continue;
                memcpy(dst + off, escaped, n + 1);
                off += n + 1;
        }
        dst[off] = '\0';
}

const char *event_next_field(const Event *e, const char **cursor) {
        const char *next = *cursor ? *cursor + strlen(*cursor) + 1 : e->fields;

        if (!*next)
                return NULL;
        *cursor = next;
        return next;
}

/* The length of a field list as copy_fields() wrote it, its closing empty string included. */
static size_t fields_size(const char *f) {
        const char *p = f;

        while (*p)
                p += strlen(p) + 1;
        return (size_t) (p - f) + 1;
}

const Event *event_log_add(EventLog *l, uint64_t realtime_usec, int level, const char *action,
                           const char *cgroup, const char *unit, const char *message,
                           const char *const *fields) {
        Event *e = &l->ring[(l->next_seq - 1) % EVENT_LOG_SIZE];
        char c[EVENT_TEXT_MAX], u[EVENT_UNIT_MAX], m[EVENT_TEXT_MAX], f[EVENT_FIELDS_MAX];
        size_t nc, nu, nm, nf;
        char *t;

        e->seq = l->next_seq++;
        e->realtime_usec = realtime_usec;
        e->level = level;
        copy(e->action, sizeof(e->action), action);
        copy(c, sizeof(c), cgroup);
        copy(u, sizeof(u), unit);
        copy(m, sizeof(m), message);
        copy_fields(f, sizeof(f), fields);
        nc = strlen(c) + 1;
        nu = strlen(u) + 1;
        nm = strlen(m) + 1;
        nf = fields_size(f);
        event_free_text(e);
        t = malloc(nc + nu + nm + nf);
        if (!t) {
                /* Out of memory: the event is kept, its text is not. */
                e->message = "(no memory for the event's text)";
                return e;
        }
        e->text = t;
        e->cgroup = memcpy(t, c, nc);
        e->unit = memcpy(t + nc, u, nu);
        e->message = memcpy(t + nc + nu, m, nm);
        e->fields = memcpy(t + nc + nu + nm, f, nf);
        return e;
}

uint64_t event_log_first(const EventLog *l) {
        uint64_t first = l->next_seq > EVENT_LOG_SIZE ? l->next_seq - EVENT_LOG_SIZE : 1;

        return MAX(first, l->cleared_seq);
}

const Event *event_log_get(const EventLog *l, uint64_t seq) {
        if (seq < event_log_first(l) || seq >= l->next_seq)
                return NULL;
        return &l->ring[(seq - 1) % EVENT_LOG_SIZE];
}

/* To the journal with the fields that name its daemon (EVENT_FIELD_SEQ, EVENT_FIELD_SOCKET) after the event's. */
static void log_event_tagged(const EventLog *l, const Event *e, LogEvent *logged) {
        const char *fields[EVENT_FIELDS_MAX / 2 + 3];
        char f_seq[48], *f_socket = NULL;
        size_t n = 0;

        for (; logged->fields && logged->fields[n] && n < ELEMENTSOF(fields) - 3; n++)
                fields[n] = logged->fields[n];
        snprintf(f_seq, sizeof(f_seq), EVENT_FIELD_SEQ "=%" PRIu64, e->seq);
        fields[n++] = f_seq;
        if (l->socket && asprintf(&f_socket, EVENT_FIELD_SOCKET "=%s", l->socket) >= 0)
                fields[n++] = f_socket;
        fields[n] = NULL;
        logged->fields = fields;
        log_event(logged, "%s", e->message);
        free(f_socket);
}

void event_record(EventLog *l, const LogEvent *ev, const char *format, ...) {
        char message[EVENT_TEXT_MAX * 4];
        _cleanup_free_ char *cgroup = ev->cgroup ? name_escape(ev->cgroup) : NULL;
        _cleanup_free_ char *unit = ev->unit ? name_escape(ev->unit) : NULL;
        LogEvent logged = *ev;
        const Event *e;
        va_list ap;

        va_start(ap, format);
        vsnprintf(message, sizeof(message), format, ap);
        va_end(ap);
        e = event_log_add(l, now_usec(CLOCK_REALTIME), ev->level, ev->action, ev->cgroup, ev->unit, message, ev->fields);
        /* The journal gets the names escaped as the API sends them: whole (cut as the ring keeps
         * them when there was no memory for a whole copy). */
        logged.cgroup = ev->cgroup ? cgroup ?: e->cgroup : NULL;
        logged.unit = ev->unit ? unit ?: e->unit : NULL;
        if (log_stderr_is_journal())
                log_event_tagged(l, e, &logged);
        else
                log_event(&logged, "%s", e->message);
        if (l->hook)
                l->hook(e, l->hook_userdata);
}

void event_action_failed(EventLog *l, uint64_t now, int error, const char *path, const char *action) {
        unsigned suppressed;

        if (!ratelimit_below(&l->failures, now, &suppressed))
                return;
        if (suppressed)
                log_warning("(%u more failed actions were not logged)", suppressed);
        log_warning_errno(error, "%s: %s failed: %m%s", path ? path : "(gone)", action,
                          error == -EACCES ? " (a subtree delegated to another user is left alone)" : "");
}
