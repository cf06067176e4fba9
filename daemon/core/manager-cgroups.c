/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "manager-cgroups.h"

#include <errno.h>
#include <stdio.h>

#include "log.h"
#include "observer-scan.h"
#include "message-ids.h"
#include "util.h"

void manager_attach_policy(Manager *m, CgEntry *e) {
        const Policy *p = config_find_policy(m->config, e->cg->path, e->unit);
        char policy_field[300], mode_field[32];
        const char *fields[] = { policy_field, mode_field, NULL };

        /* What a point governs is sampled every tick from kept files; the rest now and then. */
        observer_set_hot(m->observer, e, p && p->mode != POLICY_MODE_OFF);
        if (p == e->policy)
                return;
        e->policy = p;
        if (!p)
                return;
        snprintf(policy_field, sizeof(policy_field), "POLICY=%s", p->name);
        snprintf(mode_field, sizeof(mode_field), "MODE=%s", policy_mode_to_string(p->mode));
        event_record(m->events, &(LogEvent) { .level = LOG_INFO, .message_id = MESSAGE_POLICY_ATTACHED,
                                              .cgroup = e->cg->path, .unit = e->unit, .action = "attach-policy",
                                              .fields = fields },
                     "%s: under policy '%s' (mode %s)", e->cg->path, p->name, policy_mode_to_string(p->mode));
}

void manager_attach_policies(Manager *m) {
        Observer *o = m->observer;
        size_t with_policy = 0;

        for (size_t i = 0; i < o->cgroups.n; i++) {
                CgEntry *e = &o->cgroups.entries[i];

                manager_attach_policy(m, e);
                with_policy += e->policy != NULL;
        }
        m->n_with_policy = with_policy;
        m->policies_walks = o->walks;
        m->policies_generation = m->config_generation;
        o->n_news = 0;
        o->news_lost = false;
        o->removed_with_policy = 0;
}

void manager_adopt_news(Manager *m, bool reconcile) {
        Observer *o = m->observer;
        bool any = o->n_news > 0 || o->news_lost, governed = false;

        if (o->news_lost)
                manager_attach_policies(m);
        for (size_t i = 0; i < o->n_news; i++) {
                CgEntry *e = cgtable_find(&o->cgroups, o->news[i]);

                if (!e)
                        continue;
                manager_attach_policy(m, e);
                m->n_with_policy += e->policy != NULL;
                governed |= e->hot;
        }
        o->n_news = 0;
        m->n_with_policy -= MIN(m->n_with_policy, o->removed_with_policy);
        o->removed_with_policy = 0;
        if (governed && reconcile)
                trigger_set_reconcile(&m->triggers, o, m->config);
        if (any)
                manager_request_tick(m);
}

void manager_request_tick(Manager *m) {
        uint64_t now = manager_now_usec(m), due, at = UINT64_MAX;
        int r;

        m->ticks_requested++;
        if (m->observer->pass_open || !m->tick_source)
                return;
        due = MAX(now, m->tick_fired_usec + MANAGER_TICK_REQUEST_GAP_USEC);
        if (sd_event_source_get_time(m->tick_source, &at) >= 0 && at <= due)
                return;
        r = sd_event_source_set_time(m->tick_source, due);
        if (r < 0)
                log_debug_errno(r, "Cannot bring the tick forward: %m");
}

static int on_cgroup_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        if (observer_take_events(m->observer, manager_now_usec(m)) == -ENOMEM) {
                log_error("Out of memory while adding new cgroups, stopping");
                return sd_event_exit(m->event, 1);
        }
        manager_adopt_news(m, true);
        return 0;
}

int manager_watch_cgroups(Manager *m) {
        int fd = observer_watch_fd(m->observer), r;

        if (fd < 0)
                return 0;
        r = sd_event_add_io(m->event, &m->cgroup_events_source, fd, EPOLLIN, on_cgroup_events, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the cgroup directories' events: %m");
        (void) sd_event_source_set_description(m->cgroup_events_source, "cgroup-events");
        return 0;
}
