/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "dirty-watch.h"

#include <errno.h>

#include "log.h"
#include "util.h"

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        DirtyWatch *w = userdata;
        uint64_t dirty;
        int r = host_read_dirty_bytes(w->host, &dirty);

        if (r < 0) {
                /* Said once; the ticks still see every writer, a tick later. */
                if (!w->failed)
                        log_warning_errno(r, "Cannot read the host's dirty data from %s/meminfo: %m; a new writer "
                                          "is found at the next tick, not within %" PRIu64 " ms", w->host->proc_path,
                                          DIRTY_WATCH_PERIOD_USEC / 1000);
                w->failed = true;
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        }
        w->failed = false;
        w->reads++;
        if (dirty >= w->base + DIRTY_WATCH_RISE) {
                w->wakes++;
                w->base = UINT64_MAX - DIRTY_WATCH_RISE;        /* once until the next tick sets it again */
                w->wake(w->userdata);
        }
        return sd_event_source_set_time(s, usec + DIRTY_WATCH_PERIOD_USEC);
}

int dirty_watch_init(DirtyWatch *w, sd_event *event, HostRoot *host, void (*wake)(void *userdata), void *userdata) {
        int r;

        *w = (DirtyWatch) { .host = host, .wake = wake, .userdata = userdata,
                            .base = UINT64_MAX - DIRTY_WATCH_RISE };
        r = sd_event_add_time_relative(event, &w->timer, CLOCK_MONOTONIC, DIRTY_WATCH_PERIOD_USEC,
                                       DIRTY_WATCH_PERIOD_USEC / 10, on_timer, w);
        if (r < 0)
                return log_error_errno(r, "Cannot add the dirty data watch's timer: %m");
        (void) sd_event_source_set_description(w->timer, "dirty-watch");
        return sd_event_source_set_enabled(w->timer, SD_EVENT_OFF);
}

void dirty_watch_set(DirtyWatch *w, bool armed) {
        uint64_t dirty = UINT64_MAX - DIRTY_WATCH_RISE;
        int on = SD_EVENT_OFF;

        if (!w->timer)
                return;
        if (!armed)
                w->failed = false;      /* tried again at the next arming */
        else if (!w->failed && host_read_dirty_bytes(w->host, &dirty) < 0)
                dirty = UINT64_MAX - DIRTY_WATCH_RISE;  /* the timer says why, once */
        w->base = dirty;
        (void) sd_event_source_get_enabled(w->timer, &on);
        if (armed == (on != SD_EVENT_OFF) || (armed && w->failed))
                return;
        if (armed) {
                uint64_t now = 0;

                (void) sd_event_now(sd_event_source_get_event(w->timer), CLOCK_MONOTONIC, &now);
                (void) sd_event_source_set_time(w->timer, now + DIRTY_WATCH_PERIOD_USEC);
        }
        (void) sd_event_source_set_enabled(w->timer, armed ? SD_EVENT_ON : SD_EVENT_OFF);
}

void dirty_watch_free(DirtyWatch *w) {
        w->timer = sd_event_source_disable_unref(w->timer);
}
