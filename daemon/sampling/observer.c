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
        closep(&o->watch_fd);
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

/* Hot (and warm) cgroups every pass; a cold one at its first pass, then on its turn (spread by its id). */
static bool cold_turn(const Observer *o, const CgEntry *e) {
        return every_pass(o, e) || e->n_samples == 0 || o->cold_every <= 1 ||
               (o->passes + e->cg->id) % o->cold_every == 0;
}

/* A cold cgroup that writes is of interest to the write point's device figures: sampled every pass
 * while it writes, and for one cold interval after. */
static void update_warmth(Observer *o, CgEntry *e) {
        if (!e->hot && e->signals.valid && e->signals.write_rate > 0)
                e->warm_until = o->passes + MAX(o->cold_every, 1u);
}

void observer_warm(Observer *o, CgEntry *e) {
        if (!e->hot)
                e->warm_until = MAX(e->warm_until, o->passes + 2);
}

void observer_warm_all(Observer *o) {
        for (size_t i = 0; i < o->cgroups.n; i++) {
                CgEntry *e = &o->cgroups.entries[i];

                if (!e->hot)
                        e->warm_until = MAX(e->warm_until, o->passes + 2);
        }
}

int observer_attach(Observer *o, CgEntry *e) {
        int r;

        if (e->gone)
                return -ENODEV;
        r = cgroup_attach(o->root, e->cg);
        if (r == -ENODEV)
                e->gone = o->gone_since_walk = true;
        else if (r == -EMFILE || r == -ENFILE)
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
        if (sampler_read_limits(e->cg, &e->limits) == -ENODEV)
                e->gone = o->gone_since_walk = true;
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
        uint8_t next = e->n_samples == 0 ? 0 : (uint8_t) (e->cur ^ 1);
        int r;

        r = observer_attach(o, e);
        if (r < 0)
                return r;
        r = sampler_read_cgroup(e->cg, keep_files(o, e), &e->samples[next]);
        /* A cold cgroup's limits (five more files) with every few of its samples. */
        if (r >= 0 && !every_pass(o, e) && e->n_samples > 0 &&
            o->passes >= e->limits_pass + (uint64_t) OBSERVER_COLD_LIMITS_EVERY * o->cold_every) {
                r = sampler_read_limits(e->cg, &e->limits);
                e->limits_pass = o->passes;
        }
        release(o, e);
        if (r < 0) {
                if (r == -ENODEV) {
                        /* Kept until the next rescan drops it; its signals are void. */
                        e->gone = o->gone_since_walk = true;
                        e->signals.valid = false;
                }
                return r;
        }
        e->sample_usec[next] = now_usec;
        e->cur = next;
        if (e->n_samples < 2)
                e->n_samples++;
        if (e->n_samples == 2)
                signals_derive(&e->samples[next ^ 1], e->sample_usec[next ^ 1], &e->samples[next], now_usec,
                               o->page_size, &e->signals);
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

void observer_pass_begin(Observer *o, uint64_t now_usec) {
        observer_sample_host(o, now_usec);
        metadata_sample(o->host, &o->metadata);
        o->out_of_fds = 0;
        o->pass_open = true;
        o->pass_next_id = 0;
        o->pass_gone = 0;
        o->pass_steps = 0;
}

/* Samples one cgroup if it is its turn; every device it writes to is followed for its completion rate. */
static int pass_visit(Observer *o, CgEntry *e, uint64_t now_usec, bool *ret_sampled) {
        int r = 0;

        *ret_sampled = cold_turn(o, e);
        if (*ret_sampled) {
                bool was = every_pass(o, e);

                r = observer_sample_entry(o, e, now_usec);
                if (r == -ENOMEM)
                        return r;
                o->pass_gone += r == -ENODEV;
                update_warmth(o, e);
                if (was)
                        release(o, e);
        }
        for (size_t d = 0; r >= 0 && d < e->samples[e->cur].n_io; d++)
                (void) devstat_want(&o->devices, e->samples[e->cur].io[d].major, e->samples[e->cur].io[d].minor);
        return 0;
}

static void pass_end(Observer *o, uint64_t now_usec) {
        for (size_t i = 0; i < o->metadata.n; i++)
                (void) devstat_want(&o->devices, o->metadata.fs[i].major, o->metadata.fs[i].minor);
        for (size_t i = 0; i < o->n_swap_disks; i++)
                (void) devstat_want(&o->devices, o->swap_disks[i].major, o->swap_disks[i].minor);
        devstat_sample(o->host, &o->devices, now_usec);
        o->gone_last_pass = o->pass_gone;
        o->passes++;
        o->pass_open = false;
}

/* Cgroups looked at (sampled or not) between two looks at the clock. */
#define PASS_CLOCK_EVERY 256

int observer_pass_step(Observer *o, uint64_t now, size_t max_cgroups, uint64_t max_usec) {
        uint64_t began = max_usec == UINT64_MAX ? 0 : now_usec(CLOCK_MONOTONIC);
        size_t sampled = 0, looked = 0;
        bool look_at_clock = false;

        if (!o->pass_open)
                observer_pass_begin(o, now);
        o->pass_steps++;
        for (size_t i = cgtable_lower_bound(&o->cgroups, o->pass_next_id); i < o->cgroups.n; i++) {
                CgEntry *e = &o->cgroups.entries[i];
                bool did;

                if (sampled >= max_cgroups)
                        return 0;
                if (look_at_clock && max_usec != UINT64_MAX && now_usec(CLOCK_MONOTONIC) - began >= max_usec)
                        return 0;
                if (pass_visit(o, e, now, &did) < 0)
                        return -ENOMEM;
                o->pass_next_id = e->cg->id + 1;
                sampled += did;
                looked++;
                /* After each sample, and now and then while passing over cold cgroups not due. */
                look_at_clock = did || looked % PASS_CLOCK_EVERY == 0;
        }
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
        if (hot && keep_files(o, e))
                (void) observer_attach(o, e);
        else if (was)
                release(o, e);
}

uint64_t observer_sample_age(const CgEntry *e, uint64_t now_usec) {
        return e->n_samples > 0 ? u64_delta(now_usec, e->sample_usec[e->cur]) : UINT64_MAX;
}

const SystemSample *observer_system_sample(const Observer *o) {
        return o->system_n > 0 ? &o->system[o->system_cur] : NULL;
}
