/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "triggers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "log.h"
#include "util.h"

void trigger_set_init(TriggerSet *s, sd_event *event, PsiTriggerHandler handler, void *userdata) {
        *s = (TriggerSet) { .event = event, .handler = handler, .userdata = userdata };
}

static void drop_at(TriggerSet *s, size_t i) {
        psi_trigger_free(s->triggers[i]);
        s->triggers[i] = s->triggers[--s->n];
}

void trigger_set_clear(TriggerSet *s) {
        while (s->n > 0)
                drop_at(s, s->n - 1);
        free(s->triggers);
        s->triggers = NULL;
}

void trigger_set_remove(TriggerSet *s, PsiTrigger *t) {
        for (size_t i = 0; i < s->n; i++)
                if (s->triggers[i] == t)
                        return drop_at(s, i);
}

void trigger_set_forget_failed(TriggerSet *s) {
        for (size_t i = s->n; i > 0; i--)
                if (!psi_trigger_armed(s->triggers[i - 1]))
                        drop_at(s, i - 1);
}

size_t trigger_set_armed(const TriggerSet *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n; i++)
                n += psi_trigger_armed(s->triggers[i]);
        return n;
}

static PsiTrigger **find(TriggerSet *s, uint64_t id, PsiResource res) {
        for (size_t i = 0; i < s->n; i++)
                if (s->triggers[i]->cgroup_id == id && s->triggers[i]->resource == res)
                        return &s->triggers[i];
        return NULL;
}

/* What the kernel refused, said once per trigger; a record of it is kept so that it is not retried. */
static PsiTrigger *arm_failed(int r, const char *what, const char *file, uint64_t id, PsiResource res,
                              uint32_t threshold_ppm, uint64_t window) {
        log_warning_errno(r, "Cannot arm a PSI trigger on %s's %s (some %" PRIu64 "us per %" PRIu64
                          "us window): %m%s; it is still sampled every tick", what, file,
                          psi_threshold_usec(threshold_ppm, window), window,
                          r == -EINVAL ? " (the kernel refused the threshold or window)" :
                          r == -EOPNOTSUPP ? " (not a kernel pressure file)" : "");
        return psi_trigger_new_failed(id, res, psi_threshold_usec(threshold_ppm, window), window);
}

static void note_fallback(TriggerSet *s, uint64_t wanted, const PsiTrigger *t) {
        if (s->window_fallback_logged)
                return;
        log_warning("The kernel refused a %" PRIu64 "ms PSI window: without CAP_SYS_RESOURCE it accepts "
                    "only multiples of 2s. Using %" PRIu64 "ms windows instead.",
                    wanted / USEC_PER_MSEC, t->window_usec / USEC_PER_MSEC);
        s->window_fallback_logged = true;
}

/* Puts t in the set, in place of an old trigger of the same (id, resource). */
static void install(TriggerSet *s, PsiTrigger *t) {
        PsiTrigger **old = find(s, t->cgroup_id, t->resource), **n;

        t->mark = true;
        if (old) {
                psi_trigger_free(*old);
                *old = t;
                return;
        }
        n = realloc(s->triggers, (s->n + 1) * sizeof(PsiTrigger *));
        if (!n) {
                psi_trigger_free(t);
                return;
        }
        s->triggers = n;
        s->triggers[s->n++] = t;
}

/* Makes sure a trigger (id, res) with this threshold exists; marks it wanted. */
static void want(TriggerSet *s, uint64_t window, int dirfd, const char *what, uint64_t id, PsiResource res,
                 uint32_t threshold_ppm) {
        const char *file = res == PSI_RESOURCE_MEMORY ? (id ? "memory.pressure" : "pressure/memory")
                                                      : (id ? "io.pressure" : "pressure/io");
        PsiTrigger **have = find(s, id, res), *t = NULL;
        bool fell_back;
        int r;

        if (have && (*have)->threshold_usec == psi_threshold_usec(threshold_ppm, (*have)->window_usec)) {
                (*have)->mark = true;
                return;
        }
        if (!have && s->n >= TRIGGERS_MAX) {
                if (!s->full_logged)
                        log_warning("More than %d PSI triggers wanted; %s gets none (it is still sampled every tick)",
                                    TRIGGERS_MAX, what);
                s->full_logged = true;
                return;
        }
        r = psi_trigger_new(s->event, dirfd, file, id, res, threshold_ppm, window, s->handler, s->userdata, &t,
                            &fell_back);
        if (r == -ENOMEM)
                return;
        if (r < 0)
                t = arm_failed(r, what, file, id, res, threshold_ppm, window);
        else if (fell_back)
                note_fallback(s, window, t);
        if (!t)
                return;
        if (psi_trigger_armed(t))
                log_debug("PSI trigger armed on %s's %s: some %" PRIu64 "us per %" PRIu64 "us", what, file,
                          t->threshold_usec, t->window_usec);
        install(s, t);
}

/* Arms what a governed cgroup's policy asks for. A cgroup past the fd budget holds no directory: it is
 * opened for the arming (the trigger keeps an fd of its own) and let go again. */
static void want_cgroup(TriggerSet *s, uint64_t window, Observer *o, CgEntry *e, const DaemonSettings *d) {
        const Policy *p = e->policy;
        bool detached = !cgroup_attached(e->cg);

        if (observer_attach(o, e) < 0)
                return;         /* gone, or out of fds: tried again at the next rescan */
        if (p->pressure_target_ppm > 0)
                want(s, window, e->cg->dirfd, e->cg->path, e->cg->id, PSI_RESOURCE_MEMORY, p->pressure_target_ppm);
        if (p->protect)
                want(s, window, e->cg->dirfd, e->cg->path, e->cg->id, PSI_RESOURCE_IO,
                     p->io_pressure_limit_ppm ?: d->io_pressure_limit_ppm);
        if (detached && !e->keeps)
                cgroup_detach(e->cg);
}

void trigger_set_reconcile(TriggerSet *s, Observer *o, const Config *c) {
        const DaemonSettings *d = &c->daemon;
        uint64_t window = d->pressure_window_usec;

        for (size_t i = 0; i < s->n; i++)
                s->triggers[i]->mark = false;
        want(s, window, o->host->proc_fd, "the host", 0, PSI_RESOURCE_MEMORY, d->system_pressure_threshold_ppm);
        want(s, window, o->host->proc_fd, "the host", 0, PSI_RESOURCE_IO, d->system_pressure_threshold_ppm);
        /* The governed cgroups are the hot ones: no look at the others. */
        for (size_t i = 0;;) {
                CgEntry *e = observer_next_hot(o, &i);

                if (!e)
                        break;
                if (e->policy && e->policy->mode != POLICY_MODE_OFF)
                        want_cgroup(s, window, o, e, d);
        }
        for (size_t i = s->n; i > 0; i--)
                if (!s->triggers[i - 1]->mark)
                        drop_at(s, i - 1);
}
