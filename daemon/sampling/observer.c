/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "observer.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

int observer_new(const char *cgroup_root, const char *proc_root, const char *sys_root, Observer **ret) {
        _cleanup_(observer_freep) Observer *o = calloc(1, sizeof(Observer));
        long ps = sysconf(_SC_PAGESIZE);
        int r;

        if (!o)
                return -ENOMEM;
        o->page_size = ps > 0 ? (uint64_t) ps : 4096;
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

int observer_rescan(Observer *o) {
        int r = cgtable_refresh(&o->cgroups, o->root);

        if (r == -ENOMEM)
                return r;
        if (r < 0)
                log_warning_errno(r, "Scanning cgroups under %s failed, keeping the last view: %m", o->root->path);
        for (size_t i = 0; i < o->cgroups.n; i++) {
                CgEntry *e = &o->cgroups.entries[i];
                cgroup_forget_absent(e->cg);
                if (sampler_read_limits(e->cg, &e->limits) == -ENODEV)
                        e->gone = true;
        }
        r = metadata_discover(o->host, &o->metadata);
        if (r < 0)
                log_debug_errno(r, "Cannot list filesystems for metadata figures: %m");
        return 0;
}

int observer_sample_entry(Observer *o, CgEntry *e, uint64_t now_usec) {
        uint8_t next = e->n_samples == 0 ? 0 : (uint8_t) (e->cur ^ 1);
        int r;

        if (e->gone)
                return -ENODEV;
        r = sampler_read_cgroup(e->cg, &e->samples[next]);
        if (r < 0) {
                if (r == -ENODEV) {
                        /* Kept until the next rescan drops it; its signals are void. */
                        e->gone = true;
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

int observer_sample(Observer *o, uint64_t now_usec) {
        uint8_t next = o->system_n == 0 ? 0 : (uint8_t) (o->system_cur ^ 1);
        size_t gone = 0;

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

        metadata_sample(o->host, &o->metadata);
        for (size_t i = 0; i < o->cgroups.n; i++) {
                CgEntry *e = &o->cgroups.entries[i];
                int r = observer_sample_entry(o, e, now_usec);
                if (r == -ENOMEM)
                        return r;
                gone += r == -ENODEV;
                /* Every device a cgroup writes to is followed for its completion rate. */
                for (size_t d = 0; r >= 0 && d < e->samples[e->cur].n_io; d++)
                        (void) devstat_want(&o->devices, e->samples[e->cur].io[d].major,
                                            e->samples[e->cur].io[d].minor);
        }
        for (size_t i = 0; i < o->metadata.n; i++)
                (void) devstat_want(&o->devices, o->metadata.fs[i].major, o->metadata.fs[i].minor);
        devstat_sample(o->host, &o->devices, now_usec);
        o->gone_last_pass = gone;
        return 0;
}

const SystemSample *observer_system_sample(const Observer *o) {
        return o->system_n > 0 ? &o->system[o->system_cur] : NULL;
}
