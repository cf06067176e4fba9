/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cgroup.events of every throttled cgroup, watched through inotify (the set
 * of watches follows the ledger: actuator_watches_sync()): a cgroup emptied
 * has its throttles lifted, one removed has its records dropped, at once
 * rather than at the next tick.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "util.h"

static EventsWatch *watch_of_wd(Actuator *a, int wd) {
        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i].wd == wd)
                        return &a->watches[i];
        return NULL;
}

/* cgroup.events of a throttled cgroup changed, or the cgroup went: lifted or dropped at once. */
static bool on_cgroup_event(Actuator *a, uint64_t cgroup_id, bool removed) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, &unit, &err);
        bool changed = false;

        if (err == -ENODEV || (cg && cgroup_gone(cg))) {
                for (size_t i = a->ledger.n; i > 0; i--)
                        if (a->ledger.entries[i - 1].cgroup_id == cgroup_id) {
                                actuator_drop_vanished(a, &a->ledger.entries[i - 1], unit, true);
                                changed = true;
                        }
                return changed;
        }
        /* A removal that was not the cgroup's (a fixture's file replaced): watched again by the sync. */
        if (removed || !cg || cgroup_populated(cg) != 0)
                return false;
        return actuator_lift_emptied(a, cgroup_id) > 0;
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Actuator *a = userdata;
        union {
                struct inotify_event ev;
                char buf[4096];
        } u;
        bool changed = false;

        for (;;) {
                ssize_t n = read(fd, u.buf, sizeof(u.buf));

                if (n <= 0)
                        break;
                for (char *p = u.buf; p < u.buf + n; ) {
                        const struct inotify_event *ev = (const struct inotify_event *) p;
                        EventsWatch *w = watch_of_wd(a, ev->wd);

                        p += sizeof(struct inotify_event) + ev->len;
                        if (!w)
                                continue;
                        uint64_t id = w->cgroup_id;
                        if (ev->mask & IN_IGNORED)
                                *w = a->watches[--a->n_watches];        /* the kernel dropped it */
                        changed |= on_cgroup_event(a, id, ev->mask & IN_IGNORED);
                }
        }
        if (changed)
                (void) actuator_persist(a);
        else
                actuator_watches_sync(a);
        return 0;
}

int actuator_watches_init(Actuator *a, sd_event *event) {
        int r;

        a->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (a->inotify_fd < 0)
                return negative_errno();
        r = sd_event_add_io(event, &a->inotify_source, a->inotify_fd, EPOLLIN, on_inotify, a);
        if (r < 0)
                return r;
        /* First of all sources: an emptied cgroup's cap must be lifted before systemd, woken by
         * the same change, removes the cgroup with it (then nobody can lift it). */
        r = sd_event_source_set_priority(a->inotify_source, SD_EVENT_PRIORITY_IMPORTANT - 10);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(a->inotify_source, "cgroup-events");
        return 0;
}

void actuator_watches_free(Actuator *a) {
        sd_event_source_disable_unref(a->inotify_source);
        closep(&a->inotify_fd);
        free(a->watches);
}
