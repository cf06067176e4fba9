/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation point wired to the daemon: inputs from the observer,
 * memory.reclaim through the worker in bounded steps with what was really
 * freed measured, allocation throttles through the shared ledger, and one
 * structured event for each decision.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "manager.h"
#include "util.h"

#define MESSAGE_RECLAIM "b4c5d6e7f8094a1b2c3d4e5f60718293"

/* One memory.reclaim write asks for at most this much in a one-shot request. */
#define RECLAIM_ONE_SHOT_STEP (UINT64_C(64) << 20)

static bool exempt(const Manager *m, const char *path) {
        return streq(path, "/init.scope") || (m->own_cgroup && streq(path, m->own_cgroup));
}

static uint64_t protection_of(const CgEntry *e) {
        uint64_t p = 0;

        if (e->limits.have & (1u << LIMIT_MIN))
                p = MAX(p, e->limits.limit[LIMIT_MIN]);
        if (e->limits.have & (1u << LIMIT_LOW))
                p = MAX(p, e->limits.limit[LIMIT_LOW]);
        return p == UINT64_MAX ? 0 : p;
}

static size_t gather(Manager *m, ApCgroup *out, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < m->observer->cgroups.n && n < max; i++) {
                CgEntry *e = &m->observer->cgroups.entries[i];
                const CgroupSample *s = cg_entry_sample(e);
                const CgroupSignals *g = &e->signals;
                uint64_t file, dirty;

                if (!e->policy || e->policy->mode == POLICY_MODE_OFF || e->gone || !s ||
                    !(s->have & SAMPLE_MEMORY_STAT) || !(s->have & SAMPLE_MEMORY_CURRENT))
                        continue;
                file = sample_has_stat(s, STAT_FILE) ? s->stat[STAT_FILE] : 0;
                dirty = sample_dirty_bytes(s);
                out[n++] = (ApCgroup) {
                        .id = e->cg->id, .path = e->cg->path, .policy = e->policy,
                        .exempt = exempt(m, e->cg->path), .valid = g->valid, .interval_usec = g->interval_usec,
                        .stall_ppm = MAX(g->have_memory_stall ? g->memory_stall.some_ppm : 0,
                                         g->have_io_stall ? g->io_stall.some_ppm : 0),
                        .refault_rate = g->refault_rate, .growth_rate = g->memory_rate,
                        .memory_current = s->memory_current, .reclaimable = sample_reclaimable_bytes(s),
                        .file_clean = file > dirty ? file - dirty : 0,
                        .slab_reclaimable = sample_has_stat(s, STAT_SLAB_RECLAIMABLE) ? s->stat[STAT_SLAB_RECLAIMABLE] : 0,
                        .protection = protection_of(e),
                };
        }
        return n;
}

static void reclaim_event(Manager *m, const CgEntry *e, const char *action, bool observe, const char *fmt_extra,
                          uint64_t asked, uint64_t freed, uint64_t dur, const char *reason) {
        char f_asked[48], f_freed[48], f_dur[48], f_reason[200], f_obs[16];
        const char *fields[] = { f_asked, f_freed, f_dur, f_reason, f_obs, NULL };

        snprintf(f_asked, sizeof(f_asked), "BYTES_ASKED=%" PRIu64, asked);
        snprintf(f_freed, sizeof(f_freed), "BYTES_FREED=%" PRIu64, freed);
        snprintf(f_dur, sizeof(f_dur), "DURATION_USEC=%" PRIu64, dur);
        snprintf(f_reason, sizeof(f_reason), "REASON=%s", reason);
        snprintf(f_obs, sizeof(f_obs), "OBSERVE=%s", observe ? "yes" : "no");
        manager_event(m, &(LogEvent) { .level = observe ? LOG_INFO : LOG_NOTICE, .message_id = MESSAGE_RECLAIM,
                                       .cgroup = e->cg->path, .unit = e->unit, .action = action, .fields = fields },
                      "%s: %s%s %" PRIu64 " bytes%s (%s)", e->cg->path, observe ? "would " : "", action,
                      observe ? asked : freed, fmt_extra, reason);
}

int manager_reclaim(Manager *m, CgEntry *e, uint64_t bytes, bool cache_only, const char *reason) {
        const CgroupSample *s = cg_entry_sample(e);
        const SystemSample *sys = observer_system_sample(m->observer);
        bool swap_on = sys && (sys->meminfo_found & (1u << MEMINFO_SWAP_TOTAL)) && sys->meminfo[MEMINFO_SWAP_TOTAL] > 0;
        Job job = { .budget_usec = 10 * USEC_PER_SEC };

        if (exempt(m, e->cg->path))
                return -EPERM;
        if (bytes == UINT64_MAX)
                bytes = s ? sample_reclaimable_bytes(s) : 0;
        if (cache_only && swap_on && m->swappiness_arg == 0 && s) {
                /* No way to tell the kernel "cache only": bound the request by the clean cache. */
                uint64_t file = sample_has_stat(s, STAT_FILE) ? s->stat[STAT_FILE] : 0, dirty = sample_dirty_bytes(s);
                bytes = MIN(bytes, (file > dirty ? file - dirty : 0) +
                                   (sample_has_stat(s, STAT_SLAB_RECLAIMABLE) ? s->stat[STAT_SLAB_RECLAIMABLE] : 0));
                if (!m->swap_note_logged)
                        log_notice("This kernel's memory.reclaim takes no swappiness= and swap is on: cache-only "
                                   "requests are bounded by the clean cache, but anonymous memory may be touched");
                m->swap_note_logged = true;
        }
        if (bytes == 0)
                return 0;
        job.bytes = bytes;
        job.step = MIN(e->policy ? e->policy->reclaim_step_max : RECLAIM_ONE_SHOT_STEP, RECLAIM_ONE_SHOT_STEP);
        job.swappiness0 = cache_only && m->swappiness_arg != 0;
        snprintf(job.data, sizeof(job.data), "%s", reason);
        return manager_submit_job(m, e, &job, JOB_RECLAIM, 0, 0, 0, bytes);
}

void manager_reclaim_done(Manager *m, const Job *job, uint64_t cgroup_id) {
        CgEntry *e = cgtable_find(&m->observer->cgroups, cgroup_id);
        uint64_t freed = job->before > job->after ? job->before - job->after : 0;
        char extra[96];

        if (job->result == -EINVAL && job->swappiness0) {
                /* Probed, not guessed from the version: this kernel has no swappiness= argument. */
                log_info("memory.reclaim here takes a size only (swappiness= gives EINVAL)");
                m->swappiness_arg = 0;
                /* Asked again without it; the point's request stays in flight meanwhile. */
                if (!e || manager_reclaim(m, e, job->bytes, true, job->data) < 0)
                        alloc_point_reclaim_done(&m->alloc_point, cgroup_id, job->bytes, 0, manager_now_usec(m),
                                                 m->config->daemon.interval_usec);
                return;
        }
        if (job->swappiness0 && (job->result >= 0 || job->result == -EAGAIN))
                m->swappiness_arg = 1;
        alloc_point_reclaim_done(&m->alloc_point, cgroup_id, job->bytes, freed, manager_now_usec(m),
                                 m->config->daemon.interval_usec);
        if (!e)
                return;
        if (job->result < 0 && job->result != -EAGAIN && !job->interrupted) {
                log_warning_errno(job->result, "%s: memory.reclaim failed: %m", e->cg->path);
                return;
        }
        snprintf(extra, sizeof(extra), " of %" PRIu64 " asked in %" PRIu64 "ms%s", job->bytes,
                 job->duration_usec / USEC_PER_MSEC, job->interrupted ? ", time budget reached" : "");
        reclaim_event(m, e, "reclaim", false, extra, job->bytes, freed, job->duration_usec, job->data);
}

static int execute(Manager *m, const ApAction *a) {
        CgEntry *e = cgtable_find(&m->observer->cgroups, a->cgroup_id);

        if (!e)
                return -ENODEV;
        if (a->observe) {
                reclaim_event(m, e, ap_action_to_string(a->kind), true, "", a->value, 0, 0, a->reason);
                if (a->kind == AP_RECLAIM)
                        alloc_point_reclaim_done(&m->alloc_point, a->cgroup_id, a->value, a->value,
                                                 manager_now_usec(m), m->config->daemon.interval_usec);
                return 0;
        }
        switch (a->kind) {
        case AP_RECLAIM:
                return manager_reclaim(m, e, a->value, true, a->reason);
        case AP_SET_HIGH:
                return manager_throttle_request(m, e, THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION, a->value, a->reason);
        case AP_LIFT_HIGH:
                return manager_throttle_withdraw(m, e, a->cgroup_id, THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION,
                                                 a->reason);
        }
        return -EINVAL;
}

void manager_alloc_point(Manager *m, uint64_t now) {
        static ApCgroup cgroups[AP_STATE_MAX];
        static ApPlan plan;
        const SystemSample *sys = observer_system_sample(m->observer);
        const SystemSignals *g = &m->observer->system_signals;
        uint64_t total = sys && (sys->meminfo_found & (1u << MEMINFO_MEM_TOTAL)) ? sys->meminfo[MEMINFO_MEM_TOTAL] : 0;
        bool have_avail = sys && (sys->meminfo_found & (1u << MEMINFO_MEM_AVAILABLE));
        ApSettings st = {
                .global_threshold_ppm = m->config->daemon.system_pressure_threshold_ppm,
                .host_stall_valid = g->valid && g->have_memory_stall,
                .host_stall_ppm = g->memory_stall.some_ppm,
                .mem_available = have_avail ? sys->meminfo[MEMINFO_MEM_AVAILABLE] : UINT64_MAX,
                .mem_available_min = have_avail ? total / 1000000 * m->config->daemon.mem_available_min_ppm : 0,
                .tick_usec = m->config->daemon.interval_usec,
                .throttle_hold_usec = m->config->daemon.throttle_hold_usec,
        };
        size_t n = gather(m, cgroups, ELEMENTSOF(cgroups));

        alloc_point_decide(cgroups, n, &st, now, &m->alloc_point, &plan);
        for (size_t i = 0; i < plan.n; i++) {
                int r = execute(m, &plan.actions[i]);

                if (r >= 0)
                        continue;
                alloc_point_forget(&m->alloc_point, &plan.actions[i]);
                if (r != -ENODEV && r != -EBUSY)
                        manager_action_failed(m, r, plan.actions[i].path, ap_action_to_string(plan.actions[i].kind));
        }
}
