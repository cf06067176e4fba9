/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "observer.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

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

/* nr_descendants from the root's cgroup.stat; UINT64_MAX if it cannot be read (then every rescan walks). */
static uint64_t root_descendants(const Observer *o) {
        _cleanup_close_ int fd = -1;
        char buf[4096], *p;     /* since 6.11 it lists every controller's counts too */
        uint64_t v;

        if (kept_read(o->root->fd, "cgroup.stat", &fd, buf, sizeof(buf), NULL) < 0 ||
            !(p = strstr(buf, "nr_descendants ")) || cg_parse_u64(p + 15, strcspn(p + 15, "\n"), &v) < 0)
                return UINT64_MAX;
        return v;
}

/* Whether the tree may have changed since the last walk. */
static bool walk_needed(Observer *o, uint64_t now) {
        uint64_t d = root_descendants(o);
        bool needed = d == UINT64_MAX || d != o->descendants || o->walks == 0 || o->gone_since_walk ||
                      now >= o->walked_usec + OBSERVER_WALK_MAX_USEC;

        o->descendants = d;
        return needed;
}

/* The swap areas' disks, followed by devstat from the next pass on; the last list kept if unreadable. */
static void rescan_swaps(Observer *o) {
        SwapDisk disks[SWAPS_MAX];
        size_t unknown = 0;
        int r = swaps_disks(o->host, disks, ELEMENTSOF(disks), &unknown);

        if (r < 0) {
                log_debug_errno(r, "Cannot read the swap areas (%s/swaps): %m", o->host->proc_path);
                return;
        }
        if ((size_t) r != o->n_swap_disks || memcmp(disks, o->swap_disks, (size_t) r * sizeof(SwapDisk)) != 0) {
                char list[SWAPS_MAX * 24] = "";

                for (int i = 0; i < r; i++)
                        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%u:%u", i ? ", " : "",
                                 disks[i].major, disks[i].minor);
                if (r > 0)
                        log_info("Swap is on disk%s %s: while %s congested, reclaims that may swap are held back",
                                 r == 1 ? "" : "s", list, r == 1 ? "it is" : "one is");
                else if (o->n_swap_disks > 0)
                        log_info("No swap area on a known disk any more");
        }
        memcpy(o->swap_disks, disks, (size_t) r * sizeof(SwapDisk));
        o->n_swap_disks = (size_t) r;
        if (unknown != o->swap_unknown && unknown > 0)
                log_info("%zu swap area%s on no disk found below %s: reclaims that may swap are not held back "
                         "when %s busy", unknown, unknown == 1 ? " is" : "s are", o->host->sys_path,
                         unknown == 1 ? "it is" : "they are");
        o->swap_unknown = unknown;
}

int observer_rescan(Observer *o) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int r = 0;

        if (walk_needed(o, now)) {
                r = cgtable_refresh(&o->cgroups, o->root);
                o->walked_usec = now;
                o->walks++;
                o->gone_since_walk = false;
                /* An incomplete walk (failed, a subtree unreadable, cgroups not opened) is done again. */
                if (r < 0 || o->cgroups.walk_skipped > 0 || o->cgroups.unopened > 0)
                        o->descendants = UINT64_MAX;
                /* Removed cgroups took their share of the budget with them. */
                o->n_kept = 0;
                for (size_t i = 0; i < o->cgroups.n; i++)
                        o->n_kept += o->cgroups.entries[i].keeps;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_warning_errno(r, "Scanning cgroups under %s failed, keeping the last view: %m", o->root->path);
        for (size_t i = 0; i < o->cgroups.n; i++) {
                CgEntry *e = &o->cgroups.entries[i];

                cgroup_forget_absent(e->cg);
                /* A cold cgroup's limits are read with its samples. */
                if (!e->hot && e->limits.have != 0)
                        continue;
                if (observer_attach(o, e) < 0)
                        continue;
                if (sampler_read_limits(e->cg, &e->limits) == -ENODEV)
                        e->gone = true;
                e->limits_pass = o->passes;
                release(o, e);
        }
        r = metadata_discover(o->host, &o->metadata);
        if (r < 0)
                log_debug_errno(r, "Cannot list filesystems for metadata figures: %m");
        rescan_swaps(o);
        return 0;
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
