/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "observer.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

#include "cgfs-watch.h"
#include "cgparse.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

/* How many cgroups may keep their files open under RLIMIT_NOFILE. */
static size_t fd_budget(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return SIZE_MAX;
        return rl.rlim_cur > OBSERVER_FD_RESERVE ? (rl.rlim_cur - OBSERVER_FD_RESERVE) / OBSERVER_FDS_PER_KEPT : 0;
}

int observer_new(const char *cgroup_root, const char *proc_root, const char *sys_root, Observer **ret) {
        _cleanup_(observer_freep) Observer *o = calloc(1, sizeof(Observer));
        long ps = sysconf(_SC_PAGESIZE);
        int r;

        if (!o)
                return -ENOMEM;
        o->page_size = ps > 0 ? (uint64_t) ps : 4096;
        o->cold_every = 1;
        o->descendants = UINT64_MAX;
        o->keep_max = fd_budget();
        o->watch_fd = cg_watch_open();
        if (o->watch_fd < 0)
                log_warning_errno(o->watch_fd, "Cannot watch cgroup directories (inotify: %m): new cgroups are "
                                  "found by walks of the tree, every rescan");
        cgtable_init(&o->cgroups, o->watch_fd);
        r = cg_root_open(cgroup_root, &o->root);
        if (r < 0)
                return log_error_errno(r, "Cannot open the cgroup root %s: %m", cgroup_root);
        r = host_root_open(proc_root, sys_root, &o->host);
        if (r < 0)
                return log_error_errno(r, "Cannot open %s: %m", proc_root);
        *ret = TAKE_PTR(o);
        return 0;
}

Observer *observer_free(Observer *o) {
        if (!o)
                return NULL;
        cgtable_clear(&o->cgroups);
        sample_done(&o->scratch);
        closep(&o->watch_fd);
        free(o->every);
        metadata_view_clear(&o->metadata);
        devstat_clear(&o->devices);
        cg_root_free(o->root);
        host_root_free(o->host);
        free(o);
        return NULL;
}

static bool every_pass(const Observer *o, const CgEntry *e) {
        return e->hot || o->passes < e->warm_until;
}

/* Sampled in the first part of a pass: hot, warm, or never sampled yet (new). */
static bool in_every(const Observer *o, const CgEntry *e) {
        return every_pass(o, e) || e->n_samples == 0;
}

static size_t every_lower_bound(const Observer *o, uint64_t id) {
        size_t lo = 0, hi = o->n_every;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (o->every[mid] < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Puts a cgroup on the list the first part of each pass samples (kept sorted; a failure to grow it is
 * made good by the next rebuild, meanwhile the cgroup waits for its cold turn). */
static void every_add(Observer *o, uint64_t id) {
        size_t i = every_lower_bound(o, id);

        if (i < o->n_every && o->every[i] == id)
                return;
        if (o->n_every == o->n_every_alloc) {
                size_t want = MAX(o->n_every_alloc * 2, (size_t) 64);
                uint64_t *n = reallocarray(o->every, want, sizeof(uint64_t));

                if (!n) {
                        o->every_stale = true;
                        return;
                }
                o->every = n;
                o->n_every_alloc = want;
        }
        memmove(o->every + i + 1, o->every + i, (o->n_every - i) * sizeof(uint64_t));
        o->every[i] = id;
        o->n_every++;
}

static void every_remove_at(Observer *o, size_t i) {
        memmove(o->every + i, o->every + i + 1, (o->n_every - i - 1) * sizeof(uint64_t));
        o->n_every--;
}

void observer_every_rebuild(Observer *o) {
        o->n_every = 0;
        o->every_stale = false;
        for (size_t i = 0; i < o->cgroups.n; i++)
                if (in_every(o, &o->cgroups.entries[i]))
                        every_add(o, o->cgroups.entries[i].cg->id);
}

/* A cold cgroup that writes is of interest to the write point's device figures: sampled every pass
 * while it writes, and for one cold interval after. */
static void update_warmth(Observer *o, CgEntry *e) {
        if (!e->hot && e->signals.valid && e->signals.write_rate > 0) {
                e->warm_until = o->passes + MAX(o->cold_every, 1u);
                every_add(o, e->cg->id);
        }
}

void observer_warm(Observer *o, CgEntry *e) {
        if (e->hot)
                return;
        e->warm_until = MAX(e->warm_until, o->passes + 2);
        every_add(o, e->cg->id);
}

void observer_warm_all(Observer *o) {
        for (size_t i = 0; i < o->cgroups.n; i++) {
                CgEntry *e = &o->cgroups.entries[i];

                if (!e->hot)
                        e->warm_until = MAX(e->warm_until, o->passes + 2);
        }
        observer_every_rebuild(o);
}

int observer_attach(Observer *o, CgEntry *e) {
        int r;

        if (e->gone)
                return -ENODEV;
        r = cgroup_attach(o->root, e->cg);
        if (r == -ENODEV) {
                cgtable_set_gone(&o->cgroups, e, true);
                o->gone_since_walk = true;
        } else if (r == -EMFILE || r == -ENFILE)
                o->out_of_fds++;
        return r;
}

/* Whether the cgroup may keep its files open: sampled every pass, and within the fd budget. */
static bool keep_files(Observer *o, CgEntry *e) {
        if (!every_pass(o, e))
                return false;
        if (!e->keeps && o->n_kept < o->keep_max) {
                e->keeps = true;
                o->n_kept++;
        }
        return e->keeps;
}

/* After its sample, a cgroup that does not keep its files lets go of its fds. */
static void release(Observer *o, CgEntry *e) {
        if (e->keeps && !every_pass(o, e)) {
                e->keeps = false;
                o->n_kept--;
        }
        if (!e->keeps)
                cgroup_detach(e->cg);
}

void observer_read_limits(Observer *o, CgEntry *e) {
        if (observer_attach(o, e) < 0)
                return;
        if (sampler_read_limits(e->cg, &e->limits) == -ENODEV) {
                cgtable_set_gone(&o->cgroups, e, true);
                o->gone_since_walk = true;
        }
        e->limits_pass = o->passes;
        release(o, e);
}

void observer_drop(Observer *o, CgEntry *e, bool dir_gone) {
        if (e->keeps)
                o->n_kept--;
        o->removed_with_policy += e->policy != NULL;
        cgtable_remove_at(&o->cgroups, (size_t) (e - o->cgroups.entries), dir_gone);
}

const DevStat *observer_swap_congested(const Observer *o) {
        for (size_t i = 0; i < o->n_swap_disks; i++)
                for (size_t j = 0; j < o->devices.n; j++) {
                        const DevStat *d = &o->devices.dev[j];

                        if (d->major == o->swap_disks[i].major && d->minor == o->swap_disks[i].minor &&
                            devstat_congested_lately(d, o->devices.sampled_usec))
                                return d;
                }
        return NULL;
}

int observer_sample_entry(Observer *o, CgEntry *e, uint64_t now_usec) {
        /* A cold cgroup's limits (five more files) with every few of its samples; the files it lacked
         * are looked for again then (a controller enabled since). */
        bool limits_due = !every_pass(o, e) && e->n_samples > 0 &&
                          o->passes >= e->limits_pass + (uint64_t) OBSERVER_COLD_LIMITS_EVERY * o->cold_every;
        CgroupSample *s = &o->scratch;
        int r;

        r = observer_attach(o, e);
        if (r < 0)
                return r;
        if (limits_due)
                cgroup_forget_absent(e->cg);
        r = sampler_read_cgroup(e->cg, keep_files(o, e), s);
        if (r >= 0 && limits_due) {
                r = sampler_read_limits(e->cg, &e->limits);
                e->limits_pass = o->passes;
        }
        release(o, e);
        if (r < 0) {
                if (r == -ENODEV) {
                        /* Kept until the next rescan drops it; its signals are void. */
                        cgtable_set_gone(&o->cgroups, e, true);
                        o->gone_since_walk = true;
                        e->signals.valid = false;
                }
                return r;
        }
        /* Only the newest sample is kept: the signals are derived as it replaces the one before. Without
         * room for the devices' rates the signals are void this once; the sample is kept all the same. */
        if (e->n_samples > 0 &&
            (r = signals_derive(&e->sample, e->sample_usec, s, now_usec, o->page_size, &e->signals)) < 0)
                log_debug_errno(r, "%s: no signals from this sample: %m", e->cg->path);
        if ((r = sample_assign(&e->sample, s)) < 0)
                log_debug_errno(r, "%s: this sample's devices not kept: %m", e->cg->path);
        e->sample_usec = now_usec;
        if (e->n_samples < 2)
                e->n_samples++;
        return 0;
}

void observer_sample_host(Observer *o, uint64_t now_usec) {
        uint8_t next = o->system_n == 0 ? 0 : (uint8_t) (o->system_cur ^ 1);

        (void) sampler_read_system(o->host, &o->system[next]);
        o->system_usec[next] = now_usec;
        o->system_cur = next;
        if (o->system_n < 2)
                o->system_n++;
        if (o->system_n == 2)
                system_signals_derive(&o->system[next ^ 1], o->system_usec[next ^ 1], &o->system[next],
                                      now_usec, o->page_size, &o->system_signals);
        else
                system_signals_derive(&o->system[next], now_usec, &o->system[next], now_usec, o->page_size,
                                      &o->system_signals);
}

/* How many cold cgroups this pass samples: each once per cold interval, in turn. The credit counts in
 * µs of the cold interval where the manager gave it (so that a tick asked for out of turn samples no
 * more of them), in passes otherwise. */
static size_t cold_quota(Observer *o, uint64_t now_usec) {
        size_t n_cold = o->cgroups.n > o->n_every ? o->cgroups.n - o->n_every : 0;
        uint64_t unit = o->cold_interval_usec ?: MAX(o->cold_every, 1u), q;

        if (n_cold == 0)
                o->cold_round_began = o->cold_round_usec = 0;   /* no round to speak of */
        if (!o->cold_interval_usec)
                o->cold_credit += n_cold;
        else if (o->cold_pass_usec && now_usec > o->cold_pass_usec)
                o->cold_credit += n_cold * MIN(now_usec - o->cold_pass_usec, unit);
        o->cold_pass_usec = now_usec;
        q = o->cold_credit / unit;
        o->cold_credit -= q * unit;
        return (size_t) MIN(q, (uint64_t) n_cold);
}

/* The cold samples' share of a core, as µs they may spend: accrued since the last pass, a burst at most. */
static void cold_budget_accrue(Observer *o, uint64_t now_usec) {
        uint64_t since, ppm = MIN(o->cold_budget_ppm, (uint64_t) 1000000);
        int64_t cap;

        if (!ppm)
                return;
        since = o->cold_budget_usec && now_usec > o->cold_budget_usec ? now_usec - o->cold_budget_usec :
                o->cold_budget_usec ? 0 : USEC_PER_SEC;
        /* A loop that stalled (stopped, blocked) earns no more than two ticks' share for it. */
        since = MIN(since, o->tick_usec ? 2 * o->tick_usec : (uint64_t) 3600 * USEC_PER_SEC);
        o->cold_budget_usec = now_usec;
        cap = (int64_t) MAX((uint64_t) OBSERVER_COLD_BURST_USEC * 1000000, 2 * since * ppm);
        o->cold_budget_left = MIN(MAX(o->cold_budget_left + (int64_t) (since * ppm), -cap), cap);
}

/* CPU time of this thread (µs): what a cold sample costs, not the time it was preempted. */
static uint64_t thread_cpu_usec(void) {
        return now_usec(CLOCK_THREAD_CPUTIME_ID);
}

void observer_pass_begin(Observer *o, uint64_t now_usec) {
        observer_sample_host(o, now_usec);
        metadata_sample(o->host, &o->metadata);
        if (o->every_stale)
                observer_every_rebuild(o);
        o->out_of_fds = 0;
        o->pass_open = true;
        o->pass_cold = false;
        o->pass_next_id = 0;
        o->pass_gone = 0;
        o->pass_steps = 0;
        o->pass_quota = cold_quota(o, now_usec);
        cold_budget_accrue(o, now_usec);
        o->pass_looked = 0;
}

/* The devices a cold cgroup wrote to stay followed until its next turn (and a little more). */
static void remember_cold_devices(Observer *o, const CgroupSample *s) {
        for (size_t d = 0; d < s->n_io; d++) {
                size_t i;

                for (i = 0; i < o->n_cold_devs; i++)
                        if (o->cold_devs[i].major == s->io[d].major && o->cold_devs[i].minor == s->io[d].minor)
                                break;
                if (i == o->n_cold_devs) {
                        if (i == ELEMENTSOF(o->cold_devs))
                                continue;
                        o->n_cold_devs++;
                }
                o->cold_devs[i] = (ColdDevice) { .major = s->io[d].major, .minor = s->io[d].minor,
                                                 .until_pass = o->passes + 2 * MAX(o->cold_every, 1u) + 2 };
        }
}

/* Samples one cgroup; every device it writes to is followed for its completion rate. */
static int pass_visit(Observer *o, CgEntry *e, uint64_t now_usec) {
        bool was = every_pass(o, e);
        const CgroupSample *s;
        int r;

        r = observer_sample_entry(o, e, now_usec);
        if (r == -ENOMEM)
                return r;
        o->pass_gone += r == -ENODEV;
        update_warmth(o, e);
        if (was)
                release(o, e);
        s = cg_entry_sample(e);
        if (r < 0 || !s)
                return 0;
        for (size_t d = 0; d < s->n_io; d++)
                (void) devstat_want(&o->devices, s->io[d].major, s->io[d].minor);
        if (!every_pass(o, e))
                remember_cold_devices(o, s);
        return 0;
}

static void pass_end(Observer *o, uint64_t now_usec) {
        size_t kept = 0;

        for (size_t i = 0; i < o->metadata.n; i++)
                (void) devstat_want(&o->devices, o->metadata.fs[i].major, o->metadata.fs[i].minor);
        for (size_t i = 0; i < o->n_swap_disks; i++)
                (void) devstat_want(&o->devices, o->swap_disks[i].major, o->swap_disks[i].minor);
        for (size_t i = 0; i < o->n_cold_devs; i++)
                if (o->cold_devs[i].until_pass > o->passes) {
                        (void) devstat_want(&o->devices, o->cold_devs[i].major, o->cold_devs[i].minor);
                        o->cold_devs[kept++] = o->cold_devs[i];
                }
        o->n_cold_devs = kept;
        devstat_sample(o->host, &o->devices, now_usec);
        o->gone_last_pass = o->pass_gone;
        o->passes++;
        o->pass_open = false;
}

typedef struct Step {
        uint64_t now, began, max_usec;
        size_t max_cgroups, sampled;
} Step;

/* Whether the step has had its share: its count of cgroups, or its time (after one cgroup at least). */
static bool step_spent(const Step *st) {
        if (st->sampled >= st->max_cgroups)
                return true;
        return st->sampled > 0 && st->max_usec != UINT64_MAX && now_usec(CLOCK_MONOTONIC) - st->began >= st->max_usec;
}

/* The first part of a pass: every cgroup on the list, in id order; those no longer due leave it. */
static int step_every(Observer *o, Step *st) {
        for (size_t i = every_lower_bound(o, o->pass_next_id); i < o->n_every;) {
                CgEntry *e = cgtable_find(&o->cgroups, o->every[i]);

                if (step_spent(st))
                        return 0;
                o->pass_next_id = o->every[i] + 1;
                if (!e) {
                        every_remove_at(o, i);
                        continue;
                }
                if (pass_visit(o, e, st->now) < 0)
                        return -ENOMEM;
                st->sampled++;
                if (in_every(o, e))
                        i++;
                else
                        every_remove_at(o, i);
        }
        return 1;
}

/* The second part: cold cgroups in turn from where the last pass left off, as many as its quota. */
static int step_cold(Observer *o, Step *st) {
        size_t n = o->cgroups.n, i = cgtable_lower_bound(&o->cgroups, o->cold_next_id);

        for (; o->pass_quota > 0 && o->pass_looked < n; o->pass_looked++, i++) {
                uint64_t t0;
                CgEntry *e;

                if (i >= o->cgroups.n) {
                        i = 0;
                        /* From the start again: a step that stops here must not wrap once more. */
                        o->cold_next_id = 0;
                        if (o->cold_round_began)
                                o->cold_round_usec = u64_delta(st->now, o->cold_round_began);
                        o->cold_round_began = st->now;
                }
                e = &o->cgroups.entries[i];
                if (in_every(o, e)) {
                        o->cold_next_id = e->cg->id + 1;
                        continue;
                }
                if (step_spent(st))
                        return 0;
                if (o->cold_budget_ppm && o->cold_budget_left <= 0) {
                        /* Spent: the rest waits (the round takes longer), it is not owed. */
                        o->cold_deferred += o->pass_quota;
                        o->pass_quota = 0;
                        break;
                }
                o->cold_next_id = e->cg->id + 1;
                t0 = o->cold_budget_ppm ? thread_cpu_usec() : 0;
                if (pass_visit(o, e, st->now) < 0)
                        return -ENOMEM;
                if (o->cold_budget_ppm)
                        o->cold_budget_left -= (int64_t) MIN(u64_delta(thread_cpu_usec(), t0), (uint64_t) INT32_MAX) *
                                               1000000;
                st->sampled++;
                o->pass_quota--;
        }
        return 1;
}

int observer_pass_step(Observer *o, uint64_t now, size_t max_cgroups, uint64_t max_usec) {
        Step st = { .now = now, .max_cgroups = max_cgroups, .max_usec = max_usec,
                    .began = max_usec == UINT64_MAX ? 0 : now_usec(CLOCK_MONOTONIC) };
        int r;

        if (!o->pass_open)
                observer_pass_begin(o, now);
        o->pass_steps++;
        if (!o->pass_cold) {
                r = step_every(o, &st);
                if (r <= 0)
                        return r;
                o->pass_cold = true;
        }
        r = step_cold(o, &st);
        if (r <= 0)
                return r;
        pass_end(o, now);
        return 1;
}

int observer_sample(Observer *o, uint64_t now_usec) {
        observer_pass_begin(o, now_usec);
        return observer_pass_step(o, now_usec, SIZE_MAX, UINT64_MAX) < 0 ? -ENOMEM : 0;
}

void observer_set_hot(Observer *o, CgEntry *e, bool hot) {
        bool was = every_pass(o, e);

        e->hot = hot;
        if (hot)
                every_add(o, e->cg->id);
        if (hot && keep_files(o, e))
                (void) observer_attach(o, e);
        else if (was)
                release(o, e);
}

CgEntry *observer_next_hot(const Observer *o, size_t *cursor) {
        /* Every hot cgroup is on `every` (observer_set_hot() puts it there, and a pass keeps it); only
         * when it could not grow is the list made again, at the next pass: then the table is read. */
        if (o->every_stale) {
                while (*cursor < o->cgroups.n) {
                        CgEntry *e = &o->cgroups.entries[(*cursor)++];

                        if (e->hot && !e->gone)
                                return e;
                }
                return NULL;
        }
        while (*cursor < o->n_every) {
                CgEntry *e = cgtable_find(&o->cgroups, o->every[(*cursor)++]);

                if (e && e->hot && !e->gone)
                        return e;
        }
        return NULL;
}

uint64_t observer_sample_age(const CgEntry *e, uint64_t now_usec) {
        return e->n_samples > 0 ? u64_delta(now_usec, e->sample_usec) : UINT64_MAX;
}

const SystemSample *observer_system_sample(const Observer *o) {
        return o->system_n > 0 ? &o->system[o->system_cur] : NULL;
}
