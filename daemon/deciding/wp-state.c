/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The lookups every part of the write point makes into its inputs and its
 * state, the plan's one way in, and the sizes its budgets are made of.
 */
#include "wp-internal.h"

uint64_t wp_budget_high(const WpCgroup *c, uint64_t budget, uint32_t dirty_ratio_pct) {
        uint64_t nonfile = c->memory_current > c->file ? c->memory_current - c->file : 0;
        uint32_t ratio = dirty_ratio_pct ? dirty_ratio_pct : 20;

        /* The kernel lets a cgroup dirty about dirty_ratio% of what it may hold
         * in page cache, so room for budget*100/ratio of cache gives that budget. */
        return nonfile + budget / ratio * 100 + budget % ratio * 100 / ratio;
}

PointAction *wp_plan_add(PointPlan *p, PointActionKind kind, const WpCgroup *c) {
        return c ? plan_add(p, kind, c->id, c->path, c->policy) : plan_add(p, kind, 0, NULL, NULL);
}

const WpCgroup *wp_find_cgroup(const WpCgroup *cg, size_t n, uint64_t id) {
        for (size_t i = 0; i < n; i++)
                if (cg[i].id == id)
                        return &cg[i];
        return NULL;
}

const WpDevice *wp_find_device(const WpDevice *d, size_t n, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < n; i++)
                if (d[i].major == major && d[i].minor == minor)
                        return &d[i];
        return NULL;
}

uint64_t wp_device_rate_of(const WpCgroup *c, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < c->n_devices; i++)
                if (c->devices[i].major == major && c->devices[i].minor == minor)
                        return c->devices[i].wbytes_per_sec;
        return 0;
}

WpCap *wp_find_cap(WritePointState *s, uint64_t id, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < s->n_caps; i++)
                if (s->caps[i].cgroup_id == id && s->caps[i].major == major && s->caps[i].minor == minor)
                        return &s->caps[i];
        return NULL;
}

WpBudget *wp_find_budget(WritePointState *s, uint64_t id) {
        for (size_t i = 0; i < s->n_budgets; i++)
                if (s->budgets[i].cgroup_id == id)
                        return &s->budgets[i];
        return NULL;
}

WpDeviceQuiet *wp_quiet_of(WritePointState *s, uint32_t major, uint32_t minor, bool create) {
        for (size_t i = 0; i < s->n_quiet; i++)
                if (s->quiet[i].major == major && s->quiet[i].minor == minor)
                        return &s->quiet[i];
        if (!create || s->n_quiet >= WP_CAPS_MAX)
                return NULL;
        s->quiet[s->n_quiet] = (WpDeviceQuiet) { .major = major, .minor = minor };
        return &s->quiet[s->n_quiet++];
}

bool wp_may_cap(const WpCgroup *w, const WpCgroup *victim) {
        return !w->protect && !w->superseded && w->policy->cap_writes &&
               w->policy->priority <= victim->policy->priority && !cgroup_paths_related(w->path, victim->path);
}

bool wp_writing(const WpCgroup *w) {
        uint64_t rate = 0;

        for (size_t d = 0; d < w->n_devices; d++)
                rate += w->devices[d].wbytes_per_sec;
        return w->dirty >= WP_GUARD_DIRTY_MIN || rate >= WP_WRITING_RATE_MIN;
}

bool wp_dirty_for(const WpCgroup *w, uint32_t major, uint32_t minor) {
        if (w->dirty < WP_GUARD_DIRTY_MIN)
                return false;
        for (size_t d = 0; d < w->n_devices; d++)
                if ((w->devices[d].major != major || w->devices[d].minor != minor) &&
                    w->devices[d].wbytes_per_sec >= WP_WRITING_RATE_MIN)
                        return false;
        return true;
}

void wp_remove_cap(WritePointState *s, WpCap *c) {
        *c = s->caps[--s->n_caps];
}

uint32_t wp_baseline(const WritePointState *state, uint64_t cgroup_id) {
        for (size_t i = 0; i < state->n_baselines; i++)
                if (state->baselines[i].cgroup_id == cgroup_id)
                        return state->baselines[i].n > 0 ? state->baselines[i].ppm : 0;
        return 0;
}
