/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "bus-reply.h"

#include <errno.h>
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "json-out.h"
#include "name-escape.h"
#include "policy.h"
#include "runner.h"
#include "util.h"

/* Every append below returns a negative errno on failure; chained with `?:`. */

/* Opens a {sv} entry and its variant of signature `sig`: then its value, then two closes (three for a
 * container opened inside). Piece by piece: a list of 50,000 cgroups has a million entries, and
 * sd_bus_message_append() would read a format string for each. */
static int entry_open(sd_bus_message *m, const char *key, const char *sig) {
        int r;

        r = sd_bus_message_open_container(m, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append_basic(m, 's', key);
        if (r < 0)
                return r;
        return sd_bus_message_open_container(m, 'v', sig);
}

static int dict_basic(sd_bus_message *m, const char *key, char type, const void *v) {
        const char sig[2] = { type, '\0' };
        int r;

        r = entry_open(m, key, sig);
        if (r < 0)
                return r;
        r = sd_bus_message_append_basic(m, type, v);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int bus_dict_u64(sd_bus_message *m, const char *key, uint64_t v) {
        return dict_basic(m, key, 't', &v);
}

static int dict_u32(sd_bus_message *m, const char *key, uint32_t v) {
        return sd_bus_message_append(m, "{sv}", key, "u", v);
}

static int dict_i64(sd_bus_message *m, const char *key, int64_t v) {
        return sd_bus_message_append(m, "{sv}", key, "x", v);
}

static int dict_double(sd_bus_message *m, const char *key, double v) {
        return sd_bus_message_append(m, "{sv}", key, "d", v);
}

int bus_dict_str(sd_bus_message *m, const char *key, const char *v) {
        return dict_basic(m, key, 's', v);
}

int bus_dict_name(sd_bus_message *m, const char *key, const char *v) {
        _cleanup_free_ char *e = NULL;

        if (name_is_plain(v))
                return bus_dict_str(m, key, v);
        e = name_escape(v);
        return e ? bus_dict_str(m, key, e) : -ENOMEM;
}

/* One string of an array, escaped if it is a name. */
static int append_item(sd_bus_message *m, const char *v, bool name) {
        _cleanup_free_ char *e = NULL;

        if (!name || name_is_plain(v))
                return sd_bus_message_append(m, "s", v);
        e = name_escape(v);
        return e ? sd_bus_message_append(m, "s", e) : -ENOMEM;
}

static int dict_strv(sd_bus_message *m, const char *key, const char *const *v, size_t n, bool names) {
        int r;

        r = entry_open(m, key, "as");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "s");
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = append_item(m, v[i], names);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int bus_dict_strv(sd_bus_message *m, const char *key, const char *const *v, size_t n) {
        return dict_strv(m, key, v, n, false);
}

int bus_dict_namev(sd_bus_message *m, const char *key, const char *const *v, size_t n) {
        return dict_strv(m, key, v, n, true);
}

int bus_dict_open(sd_bus_message *m, const char *key) {
        int r = entry_open(m, key, "a{sv}");

        if (r < 0)
                return r;
        return sd_bus_message_open_container(m, 'a', "{sv}");
}

int bus_dict_close(sd_bus_message *m) {
        int r;

        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

/* An array of dictionaries under `key`: open, then per item sd_bus_message_open_container(m, 'a'...). */
static int dict_open_array(sd_bus_message *m, const char *key) {
        int r = entry_open(m, key, "aa{sv}");

        if (r < 0)
                return r;
        return sd_bus_message_open_container(m, 'a', "a{sv}");
}

int bus_dict_limit(sd_bus_message *m, const char *key, uint64_t v) {
        return v == UINT64_MAX ? bus_dict_str(m, key, "max") : bus_dict_u64(m, key, v);
}

/*
 * Where a cgroup's figures go: a D-Bus dictionary (a{sv}), or JSON text of
 * the same members, in the same order, as mdctl would print that dictionary
 * (ListCgroupsJSON: at 50,000 cgroups, a million dictionary entries cost the
 * daemon and the client more than a second between them; the text about a quarter of it).
 */
typedef struct Sink {
        sd_bus_message *m;      /* NULL: JSON to f */
        FILE *f;
        unsigned depth;         /* objects open in f */
        bool more[8];           /* per depth: a member written, so the next needs a comma */
} Sink;

/* JSON: the key of the next member, after a comma if one came before it. */
static void json_key(Sink *k, const char *key) {
        if (k->more[k->depth])
                fputc(',', k->f);
        k->more[k->depth] = true;
        if (key) {
                json_string(k->f, key);
                fputc(':', k->f);
        }
}

static int sink_u64(Sink *k, const char *key, uint64_t v) {
        if (k->m)
                return bus_dict_u64(k->m, key, v);
        json_key(k, key);
        json_u64(k->f, v);
        return 0;
}

static int sink_u32(Sink *k, const char *key, uint32_t v) {
        if (k->m)
                return dict_u32(k->m, key, v);
        return sink_u64(k, key, v);
}

static int sink_i64(Sink *k, const char *key, int64_t v) {
        if (k->m)
                return dict_i64(k->m, key, v);
        json_key(k, key);
        json_i64(k->f, v);
        return 0;
}

static int sink_str(Sink *k, const char *key, const char *v) {
        if (k->m)
                return bus_dict_str(k->m, key, v);
        json_key(k, key);
        json_string(k->f, v);
        return 0;
}

/* A name as bus_dict_name() sends it: its escaped form, then as any string. */
static int sink_name(Sink *k, const char *key, const char *v) {
        _cleanup_free_ char *e = NULL;

        if (k->m)
                return bus_dict_name(k->m, key, v);
        if (!name_is_plain(v) && !(e = name_escape(v)))
                return -ENOMEM;
        return sink_str(k, key, e ?: v);
}

static int sink_limit(Sink *k, const char *key, uint64_t v) {
        return v == UINT64_MAX ? sink_str(k, key, "max") : sink_u64(k, key, v);
}

/* An object under `key`, or a row of an array (key NULL, JSON only: a row of D-Bus is opened by its
 * caller). */
static int sink_open(Sink *k, const char *key) {
        if (k->m)
                return bus_dict_open(k->m, key);
        if (k->depth + 1 >= ELEMENTSOF(k->more))
                return -E2BIG;
        json_key(k, key);
        fputc('{', k->f);
        k->more[++k->depth] = false;
        return 0;
}

static int sink_close(Sink *k) {
        if (k->m)
                return bus_dict_close(k->m);
        assert(k->depth > 0);
        fputc('}', k->f);
        k->depth--;
        return 0;
}

static int psi_line(sd_bus_message *m, const char *key, const PsiLine *l) {
        int r;

        r = bus_dict_open(m, key);
        if (r < 0)
                return r;
        r = dict_double(m, "avg10", l->avg10 / 100.0);
        if (r < 0)
                return r;
        r = dict_double(m, "avg60", l->avg60 / 100.0);
        if (r < 0)
                return r;
        r = dict_double(m, "avg300", l->avg300 / 100.0);
        if (r < 0)
                return r;
        r = bus_dict_u64(m, "total", l->total);
        if (r < 0)
                return r;
        return bus_dict_close(m);
}

static int psi(sd_bus_message *m, const char *key, bool have, const PsiStats *p) {
        int r;

        if (!have)
                return 0;
        r = bus_dict_open(m, key);
        if (r < 0)
                return r;
        r = psi_line(m, "some", &p->some);
        if (r < 0)
                return r;
        if (p->has_full && (r = psi_line(m, "full", &p->full)) < 0)
                return r;
        return bus_dict_close(m);
}

static int stall(Sink *k, const char *key, bool have, const StallDelta *d) {
        int r;

        if (!have)
                return 0;
        r = sink_open(k, key);
        if (r < 0)
                return r;
        r = sink_u64(k, "some_usec", d->some_usec);
        if (r < 0)
                return r;
        r = sink_u64(k, "full_usec", d->full_usec);
        if (r < 0)
                return r;
        r = sink_u32(k, "some_ppm", d->some_ppm);
        if (r < 0)
                return r;
        r = sink_u32(k, "full_ppm", d->full_ppm);
        if (r < 0)
                return r;
        return sink_close(k);
}

static int identity(Sink *k, const CgEntry *e) {
        int r;

        r = sink_name(k, "path", e->cg->path);
        if (r < 0)
                return r;
        r = sink_u64(k, "id", e->cg->id);
        if (r < 0)
                return r;
        if (e->unit && (r = sink_name(k, "unit", e->unit)) < 0)
                return r;
        if (e->policy && (r = sink_str(k, "policy", e->policy->name)) < 0)
                return r;
        if (e->policy && (r = sink_str(k, "mode", policy_mode_to_string(e->policy->mode))) < 0)
                return r;
        return 0;
}

static int limits(Sink *k, const CgroupLimits *l) {
        static const char *const names[_LIMIT_MAX] = { "memory_high", "memory_max", "memory_low", "memory_min" };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < _LIMIT_MAX; i++)
                if (l->have & (1u << i))
                        r = sink_limit(k, names[i], l->limit[i]);
        if (r < 0 || !(l->have & LIMITS_HAVE_EVENTS))
                return r;
        r = sink_open(k, "memory_events");
        for (size_t i = 0; r >= 0 && i < _EVENT_MAX; i++)
                r = sink_u64(k, memory_event_keys[i], l->events[i]);
        if (r < 0)
                return r;
        return sink_close(k);
}

/* How old the figures are: governed cgroups are sampled every tick, the others now and then. */
static int freshness(Sink *k, const CgEntry *e, uint64_t now) {
        uint64_t age = observer_sample_age(e, now);
        int r;

        if (age != UINT64_MAX && (r = sink_u64(k, "sample_age_usec", age)) < 0)
                return r;
        return sink_str(k, "sampling", e->hot ? "every-tick" : "slow");
}

/* Figures both the summary and the full view carry. */
static int common_figures(Sink *k, const CgEntry *e, const CgroupSample *s, uint64_t now) {
        bool stat = s && (s->have & SAMPLE_MEMORY_STAT);
        int r;

        if (s && (s->have & SAMPLE_MEMORY_CURRENT) && (r = sink_u64(k, "memory_current", s->memory_current)) < 0)
                return r;
        if (stat && (r = sink_u64(k, "dirty", sample_dirty_bytes(s))) < 0)
                return r;
        if (stat && (r = sink_u64(k, "reclaimable_estimate", sample_reclaimable_bytes(s))) < 0)
                return r;
        r = freshness(k, e, now);
        if (r < 0)
                return r;
        return limits(k, &e->limits);
}

static int devices(sd_bus_message *m, const CgroupSignals *g) {
        int r;

        r = dict_open_array(m, "devices");
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < g->n_devices; i++) {
                char dev[32];

                snprintf(dev, sizeof(dev), "%" PRIu32 ":%" PRIu32, g->devices[i].major, g->devices[i].minor);
                r = sd_bus_message_append(m, "a{sv}", 4, "device", "s", dev,
                                          "rbytes_per_sec", "t", g->devices[i].rbytes_per_sec,
                                          "wbytes_per_sec", "t", g->devices[i].wbytes_per_sec,
                                          "ios", "t", g->devices[i].ios);
        }
        if (r < 0)
                return r;
        return bus_dict_close(m);
}

/* The io wait per request, as IOLatencyTarget= measures it: the io stall time over the requests
 * io.stat counted (the whole stall when it counted none); nothing without io nor stall. */
static int io_wait(Sink *k, const CgroupSignals *g) {
        uint64_t ios = 0;
        int r;

        for (size_t i = 0; i < g->n_devices; i++)
                ios += g->devices[i].ios;
        if (!g->have_io_stall || (ios == 0 && g->io_stall.some_usec == 0))
                return 0;
        r = sink_u64(k, "io_requests", ios);
        if (r < 0)
                return r;
        return sink_u64(k, "io_wait_per_request_usec", g->io_stall.some_usec / MAX(ios, UINT64_C(1)));
}

/* The signals between the last two samples; `full` adds the rates only `show` needs (D-Bus only). */
static int signals(Sink *k, const CgroupSignals *g, bool full) {
        int r;

        if (!g->valid)
                return 0;
        if (full && !k->m)
                return -EOPNOTSUPP;
        r = sink_open(k, "signals");
        if (r < 0)
                return r;
        r = sink_u64(k, "interval_usec", g->interval_usec);
        if (r < 0)
                return r;
        r = stall(k, "memory_stall", g->have_memory_stall, &g->memory_stall);
        if (r < 0)
                return r;
        r = stall(k, "io_stall", g->have_io_stall, &g->io_stall);
        if (r < 0)
                return r;
        if (g->have_memory_stat && (r = sink_i64(k, "dirty_rate", g->dirty_rate)) < 0)
                return r;
        r = sink_u64(k, "write_rate", g->write_rate);
        if (r < 0)
                return r;
        if (full && g->have_memory_stat) {
                r = sink_u64(k, "refault_rate", g->refault_rate);
                if (r < 0)
                        return r;
                r = sink_u64(k, "scan_rate", g->scan_rate);
                if (r < 0)
                        return r;
                r = sink_u64(k, "steal_rate", g->steal_rate);
                if (r < 0)
                        return r;
        }
        if (full && (r = io_wait(k, g)) < 0)
                return r;
        if (full && (r = devices(k->m, g)) < 0)
                return r;
        return sink_close(k);
}

/* The summary's members, into either form. */
static int summary(Sink *k, const CgEntry *e, uint64_t now) {
        static const MemoryStatKey keys[] = { STAT_FILE, STAT_FILE_DIRTY, STAT_FILE_WRITEBACK, STAT_SLAB_RECLAIMABLE };
        const CgroupSample *s = cg_entry_sample(e);
        int r;

        r = identity(k, e);
        if (r < 0)
                return r;
        r = common_figures(k, e, s, now);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && s && i < ELEMENTSOF(keys); i++)
                if (sample_has_stat(s, keys[i]))
                        r = sink_u64(k, memory_stat_keys[keys[i]], s->stat[keys[i]]);
        if (r < 0)
                return r;
        return signals(k, &e->signals, false);
}

int bus_append_cgroup_summary(sd_bus_message *m, const Observer *o, const CgEntry *e) {
        Sink k = { .m = m };
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        r = summary(&k, e, now_usec(CLOCK_MONOTONIC));
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int json_append_cgroup_summary(FILE *f, const CgEntry *e, uint64_t now) {
        Sink k = { .f = f };
        int r;

        fputc('{', f);
        r = summary(&k, e, now);
        fputc('}', f);
        return r;
}

static int io_device(sd_bus_message *m, const IoStatDev *io) {
        char dev[32];
        int r;

        snprintf(dev, sizeof(dev), "%" PRIu32 ":%" PRIu32, io->major, io->minor);
        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        r = bus_dict_str(m, "device", dev);
        if (r < 0)
                return r;
        r = bus_dict_u64(m, "rbytes", io->rbytes);
        if (r < 0)
                return r;
        r = bus_dict_u64(m, "wbytes", io->wbytes);
        if (r < 0)
                return r;
        r = bus_dict_u64(m, "rios", io->rios);
        if (r < 0)
                return r;
        r = bus_dict_u64(m, "wios", io->wios);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

static int io_devices(sd_bus_message *m, const CgroupSample *s) {
        int r;

        r = dict_open_array(m, "io");
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n_io; i++) {
                r = io_device(m, &s->io[i]);
                if (r < 0)
                        return r;
        }
        return bus_dict_close(m);
}

static int sample_files(sd_bus_message *m, const CgroupSample *s) {
        static const struct { unsigned bit; const char *file; } files[] = {
                { SAMPLE_MEMORY_CURRENT, "memory.current" }, { SAMPLE_MEMORY_STAT, "memory.stat" },
                { SAMPLE_MEMORY_PRESSURE, "memory.pressure" }, { SAMPLE_IO_PRESSURE, "io.pressure" },
                { SAMPLE_IO_STAT, "io.stat" },
        };
        const char *bad[ELEMENTSOF(files)];
        size_t n = 0;
        int r = 0;

        for (size_t k = 0; r >= 0 && k < _STAT_MAX; k++)
                if (sample_has_stat(s, k))
                        r = bus_dict_u64(m, memory_stat_keys[k], s->stat[k]);
        if (r < 0)
                return r;
        r = psi(m, "memory_pressure", s->have & SAMPLE_MEMORY_PRESSURE, &s->memory_pressure);
        if (r < 0)
                return r;
        r = psi(m, "io_pressure", s->have & SAMPLE_IO_PRESSURE, &s->io_pressure);
        if (r < 0)
                return r;
        if ((s->have & SAMPLE_IO_STAT) && (r = io_devices(m, s)) < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (s->garbage & files[i].bit)
                        bad[n++] = files[i].file;
        return bus_dict_strv(m, "unparsable", bad, n);
}

/* The IOLatencyTarget= in force under the cgroup's policy, and what set it: "policy", "default"
 * ([WritePoint] IOLatencyTarget=) or the filesystem's type (IOLatencyTargetByFilesystem=). It acts
 * while the cgroup is protected: Protect=yes, or a Priority= over the writers beside it. */
static int latency_target(sd_bus_message *m, const CgEntry *e, const Observer *o, const DaemonSettings *d) {
        size_t n = e->signals.valid ? e->signals.n_devices : 0;
        int fs, r;
        uint64_t t;

        /* Only a governed cgroup's target acts (it is what protects it from the writers beside it). */
        if (!e->policy || e->policy->mode == POLICY_MODE_OFF || !d)
                return 0;
        t = write_latency_target(e->policy, d, &o->metadata, e->signals.devices, n, &fs);
        if (!t)
                return 0;
        r = bus_dict_u64(m, "io_latency_target_usec", t);
        if (r < 0)
                return r;
        return bus_dict_str(m, "io_latency_target_by", fs >= 0 ? fs_type_to_string((FsType) fs) :
                                                         e->policy->io_latency_target_usec ? "policy" : "default");
}

int bus_append_cgroup(sd_bus_message *m, const Observer *o, const CgEntry *e, const DaemonSettings *d) {
        const CgroupSample *s = cg_entry_sample(e);
        Sink k = { .m = m };
        uint64_t meta = 0;
        int r;

        r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        r = identity(&k, e);
        if (r < 0)
                return r;
        r = common_figures(&k, e, s, now_usec(CLOCK_MONOTONIC));
        if (r < 0)
                return r;
        if (s && (r = sample_files(m, s)) < 0)
                return r;
        r = signals(&k, &e->signals, true);
        if (r < 0)
                return r;
        if (metadata_attribute(&o->metadata, &o->devices, &e->signals, &meta) && (r = bus_dict_u64(m, "metadata_dirty_estimate", meta)) < 0)
                return r;
        r = latency_target(m, e, o, d);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

static int meminfo(sd_bus_message *m, const SystemSample *s) {
        int r;

        r = bus_dict_open(m, "meminfo");
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < _MEMINFO_MAX; i++)
                if (s->meminfo_found & (UINT64_C(1) << i))
                        r = bus_dict_u64(m, meminfo_keys[i], s->meminfo[i]);
        if (r < 0)
                return r;
        return bus_dict_close(m);
}

int bus_append_system(sd_bus_message *m, const Observer *o) {
        const SystemSample *s = observer_system_sample(o);
        const SystemSignals *g = &o->system_signals;
        Sink k = { .m = m };
        int r;

        r = bus_dict_open(m, "system");
        if (r < 0)
                return r;
        if (s && (r = psi(m, "memory_pressure", s->have & SYSTEM_MEMORY_PRESSURE, &s->memory_pressure)) < 0)
                return r;
        if (s && (r = psi(m, "io_pressure", s->have & SYSTEM_IO_PRESSURE, &s->io_pressure)) < 0)
                return r;
        if (s && (s->have & SYSTEM_MEMINFO) && (r = meminfo(m, s)) < 0)
                return r;
        if (s && (s->have & SYSTEM_VMSTAT)) {
                r = bus_dict_u64(m, "dirty_bytes", g->dirty_bytes);
                if (r < 0)
                        return r;
                r = bus_dict_u64(m, "dirty_threshold_bytes", g->dirty_threshold_bytes);
                if (r < 0)
                        return r;
                r = bus_dict_u64(m, "dirty_background_threshold_bytes", g->dirty_background_threshold_bytes);
                if (r < 0)
                        return r;
        }
        if (g->valid && (r = stall(&k, "memory_stall", g->have_memory_stall, &g->memory_stall)) < 0)
                return r;
        if (g->valid && (r = stall(&k, "io_stall", g->have_io_stall, &g->io_stall)) < 0)
                return r;
        if (g->valid && (r = bus_dict_u64(m, "refault_rate", g->refault_rate)) < 0)
                return r;
        return bus_dict_close(m);
}
