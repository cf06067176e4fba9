/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "event-log.h"

#include <stdio.h>
#include <string.h>

void event_log_init(EventLog *l) {
        memset(l, 0, sizeof(*l));
        l->next_seq = 1;
}

static void copy(char *dst, size_t size, const char *src) {
        snprintf(dst, size, "%s", src ? src : "");
}

const Event *event_log_add(EventLog *l, uint64_t realtime_usec, int level, const char *action,
                           const char *cgroup, const char *unit, const char *message) {
        Event *e = &l->ring[(l->next_seq - 1) % EVENT_LOG_SIZE];

        e->seq = l->next_seq++;
        e->realtime_usec = realtime_usec;
        e->level = level;
        copy(e->action, sizeof(e->action), action);
        copy(e->cgroup, sizeof(e->cgroup), cgroup);
        copy(e->unit, sizeof(e->unit), unit);
        copy(e->message, sizeof(e->message), message);
        return e;
}

uint64_t event_log_first(const EventLog *l) {
        return l->next_seq > EVENT_LOG_SIZE ? l->next_seq - EVENT_LOG_SIZE : 1;
}

const Event *event_log_get(const EventLog *l, uint64_t seq) {
        if (seq < event_log_first(l) || seq >= l->next_seq)
                return NULL;
        return &l->ring[(seq - 1) % EVENT_LOG_SIZE];
}
