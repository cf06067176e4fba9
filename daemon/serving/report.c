/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "report.h"

#include <inttypes.h>
#include <string.h>

#include "json-out.h"
#include "name-escape.h"
#include "parse-util.h"
#include "policy.h"
#include "util.h"

static void psi_line_json(FILE *f, const PsiLine *l) {
        fprintf(f, "{\"avg10\":%u.%02u,\"avg60\":%u.%02u,\"avg300\":%u.%02u,\"total\":%" PRIu64 "}",
                (unsigned) l->avg10 / 100, (unsigned) l->avg10 % 100, (unsigned) l->avg60 / 100,
                (unsigned) l->avg60 % 100, (unsigned) l->avg300 / 100, (unsigned) l->avg300 % 100, l->total);
}

static void psi_json(FILE *f, bool have, const PsiStats *p) {
        if (!have) {
                fputs("null", f);
                return;
        }
        fputs("{\"some\":", f);
        psi_line_json(f, &p->some);
        fputs(",\"full\":", f);
        if (p->has_full)
                psi_line_json(f, &p->full);
        else
                fputs("null", f);
        fputc('}', f);
}

static void stall_json(FILE *f, bool have, const StallDelta *d) {
        if (!have) {
                fputs("null", f);
                return;
        }
        fprintf(f, "{\"some_usec\":%" PRIu64 ",\"full_usec\":%" PRIu64 ",\"some_ppm\":%" PRIu32
                ",\"full_ppm\":%" PRIu32 "}", d->some_usec, d->full_usec, d->some_ppm, d->full_ppm);
}

/* A limit: bytes, "max" for no limit, null if absent. */
static void limit_json(FILE *f, bool have, uint64_t v) {
        if (have && v == UINT64_MAX)
                fputs("\"max\"", f);
        else
                json_u64_or_null(f, have, v);
}

static void signals_json(FILE *f, const CgroupSignals *s) {
        if (!s->valid) {
                fputs("null", f);
                return;
        }
        fprintf(f, "{\"interval_usec\":%" PRIu64 ",\"memory_stall\":", s->interval_usec);
        stall_json(f, s->have_memory_stall, &s->memory_stall);
        fputs(",\"io_stall\":", f);
        stall_json(f, s->have_io_stall, &s->io_stall);
        if (s->have_memory_stat)
                fprintf(f, ",\"dirty_rate\":%" PRId64 ",\"refault_rate\":%" PRIu64 ",\"scan_rate\":%" PRIu64
                        ",\"steal_rate\":%" PRIu64, s->dirty_rate, s->refault_rate, s->scan_rate, s->steal_rate);
        else
                fputs(",\"dirty_rate\":null,\"refault_rate\":null,\"scan_rate\":null,\"steal_rate\":null", f);
        fprintf(f, ",\"write_rate\":%" PRIu64 ",\"devices\":[", s->write_rate);
        for (size_t i = 0; i < s->n_devices; i++)
                fprintf(f, "%s{\"device\":\"%" PRIu32 ":%" PRIu32 "\",\"rbytes_per_sec\":%" PRIu64
                        ",\"wbytes_per_sec\":%" PRIu64 "}", i ? "," : "", s->devices[i].major,
                        s->devices[i].minor, s->devices[i].rbytes_per_sec, s->devices[i].wbytes_per_sec);
        fputs("]}", f);
}

static const struct {
        unsigned bit;
        const char *file;
} sample_files[] = {
        { SAMPLE_MEMORY_CURRENT, "memory.current" },
        { SAMPLE_MEMORY_STAT, "memory.stat" },
        { SAMPLE_MEMORY_PRESSURE, "memory.pressure" },
        { SAMPLE_IO_PRESSURE, "io.pressure" },
        { SAMPLE_IO_STAT, "io.stat" },
};

static void limits_json(FILE *f, const CgroupLimits *l) {
        static const char *const names[_LIMIT_MAX] = { "memory_high", "memory_max", "memory_low", "memory_min" };

        for (size_t i = 0; i < _LIMIT_MAX; i++) {
                fprintf(f, ",\"%s\":", names[i]);
                limit_json(f, l->have & (1u << i), l->limit[i]);
        }
        fputs(",\"memory_events\":", f);
        if (!(l->have & LIMITS_HAVE_EVENTS)) {
                fputs("null", f);
                return;
        }
        for (size_t i = 0; i < _EVENT_MAX; i++)
                fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "{", memory_event_keys[i], l->events[i]);
        fputc('}', f);
}

static void sample_json(FILE *f, const CgroupSample *s) {
        fputs(",\"memory_current\":", f);
        json_u64_or_null(f, s->have & SAMPLE_MEMORY_CURRENT, s->memory_current);
        for (size_t k = 0; k < _STAT_MAX; k++) {
                fprintf(f, ",\"%s\":", memory_stat_keys[k]);
                json_u64_or_null(f, sample_has_stat(s, k), s->stat[k]);
        }
        fputs(",\"dirty\":", f);
        json_u64_or_null(f, s->have & SAMPLE_MEMORY_STAT, sample_dirty_bytes(s));
        fputs(",\"reclaimable_estimate\":", f);
        json_u64_or_null(f, s->have & SAMPLE_MEMORY_STAT, sample_reclaimable_bytes(s));
        fputs(",\"memory_pressure\":", f);
        psi_json(f, s->have & SAMPLE_MEMORY_PRESSURE, &s->memory_pressure);
        fputs(",\"io_pressure\":", f);
        psi_json(f, s->have & SAMPLE_IO_PRESSURE, &s->io_pressure);
        fputs(",\"io\":", f);
        if (!(s->have & SAMPLE_IO_STAT))
                fputs("null", f);
        else {
                fputc('[', f);
                for (size_t i = 0; i < s->n_io; i++)
                        fprintf(f, "%s{\"device\":\"%" PRIu32 ":%" PRIu32 "\",\"rbytes\":%" PRIu64 ",\"wbytes\":%" PRIu64
                                ",\"rios\":%" PRIu64 ",\"wios\":%" PRIu64 "}", i ? "," : "", s->io[i].major,
                                s->io[i].minor, s->io[i].rbytes, s->io[i].wbytes, s->io[i].rios, s->io[i].wios);
                fputc(']', f);
        }
        fputs(",\"unparsable\":[", f);
        for (size_t i = 0, n = 0; i < ELEMENTSOF(sample_files); i++)
                if (s->garbage & sample_files[i].bit) {
                        fputs(n++ ? "," : "", f);
                        json_string(f, sample_files[i].file);
                }
        fputc(']', f);
}

static void cgroup_json(FILE *f, const Observer *o, const CgEntry *e) {
        const CgroupSample *s = cg_entry_sample(e);
        static const CgroupSample empty;

        fputs("{\"path\":", f);
        json_name(f, e->cg->path);
        fprintf(f, ",\"id\":%" PRIu64 ",\"unit\":", e->cg->id);
        if (e->unit)
                json_name(f, e->unit);
        else
                fputs("null", f);
        fputs(",\"policy\":", f);
        json_string_or_null(f, e->policy ? e->policy->name : NULL);
        limits_json(f, &e->limits);
        sample_json(f, s ? s : &empty);
        fputs(",\"signals\":", f);
        signals_json(f, &e->signals);
        fputs(",\"metadata_dirty_estimate\":", f);
        {
                uint64_t bytes = 0;
                bool have = metadata_attribute(&o->metadata, &o->devices, &e->signals, &bytes);
                json_u64_or_null(f, have, bytes);
        }
        fputc('}', f);
}

static void filesystems_json(FILE *f, const MetadataView *v, const DevStatTable *devices) {
        fputc('[', f);
        for (size_t i = 0; i < v->n; i++) {
                const FsMetadata *m = &v->fs[i];
                fprintf(f, "%s{\"type\":\"%s\",\"device\":", i ? "," : "", fs_type_to_string(m->type));
                json_string(f, m->device);
                fprintf(f, ",\"dev\":\"%" PRIu32 ":%" PRIu32 "\",\"metadata_dirty_estimate\":", m->major, m->minor);
                json_u64_or_null(f, m->have_pending, m->pending_bytes);
                const DevStat *ds = devstat_find((DevStatTable *) devices, m->disk_major, m->disk_minor);
                fprintf(f, ",\"write_rate\":%" PRIu64 "}", ds ? ds->write_rate : 0);
        }
        fputc(']', f);
}

static void system_json(FILE *f, const Observer *o) {
        const SystemSample *s = observer_system_sample(o);
        const SystemSignals *g = &o->system_signals;
        static const SystemSample empty;

        if (!s)
                s = &empty;
        fputs("{\"memory_pressure\":", f);
        psi_json(f, s->have & SYSTEM_MEMORY_PRESSURE, &s->memory_pressure);
        fputs(",\"io_pressure\":", f);
        psi_json(f, s->have & SYSTEM_IO_PRESSURE, &s->io_pressure);
        fputs(",\"meminfo\":", f);
        if (!(s->have & SYSTEM_MEMINFO))
                fputs("null", f);
        else
                for (size_t i = 0, n = 0; i < _MEMINFO_MAX; i++) {
                        fprintf(f, "%s\"%s\":", n++ ? "," : "{", meminfo_keys[i]);
                        json_u64_or_null(f, s->meminfo_found & (UINT64_C(1) << i), s->meminfo[i]);
                        if (i + 1 == _MEMINFO_MAX)
                                fputc('}', f);
                }
        fputs(",\"dirty_bytes\":", f);
        json_u64_or_null(f, s->have & SYSTEM_VMSTAT, g->dirty_bytes);
        fputs(",\"dirty_threshold_bytes\":", f);
        json_u64_or_null(f, s->have & SYSTEM_VMSTAT, g->dirty_threshold_bytes);
        fputs(",\"dirty_background_threshold_bytes\":", f);
        json_u64_or_null(f, s->have & SYSTEM_VMSTAT, g->dirty_background_threshold_bytes);
        fputs(",\"filesystems\":", f);
        filesystems_json(f, &o->metadata, &o->devices);
        fputs(",\"devices\":[", f);
        for (size_t i = 0; i < o->devices.n; i++)
                fprintf(f, "%s{\"dev\":\"%" PRIu32 ":%" PRIu32 "\",\"write_rate\":%" PRIu64 ",\"capacity_estimate\":%" PRIu64 "}",
                        i ? "," : "", o->devices.dev[i].major, o->devices.dev[i].minor, o->devices.dev[i].write_rate,
                        o->devices.dev[i].capacity);
        fputc(']', f);
        fputs(",\"signals\":", f);
        if (!g->valid)
                fputs("null", f);
        else {
                fprintf(f, "{\"interval_usec\":%" PRIu64 ",\"memory_stall\":", g->interval_usec);
                stall_json(f, g->have_memory_stall, &g->memory_stall);
                fputs(",\"io_stall\":", f);
                stall_json(f, g->have_io_stall, &g->io_stall);
                fprintf(f, ",\"refault_rate\":%" PRIu64 "}", g->refault_rate);
        }
        fputc('}', f);
}

void report_json(const Observer *o, FILE *f) {
        fputs("{\"cgroup_root\":", f);
        json_name(f, o->root->path);
        fputs(",\"page_size\":", f);
        fprintf(f, "%" PRIu64 ",\"system\":", o->page_size);
        system_json(f, o);
        fputs(",\"cgroups\":[", f);
        for (size_t i = 0, n = 0; i < o->cgroups.n; i++) {
                const CgEntry *e = &o->cgroups.entries[i];
                if (e->gone)
                        continue;
                fputs(n++ ? ",\n" : "\n", f);
                cgroup_json(f, o, e);
        }
        fputs("\n]}\n", f);
}

static const char *cell_size(char *buf, bool have, uint64_t v) {
        return have ? format_size(buf, v) : "-";
}

static const char *cell_stall(char *buf, bool have, const StallDelta *d) {
        if (!have)
                return "-";
        snprintf(buf, FORMAT_SIZE_MAX, "%u.%02u%%", d->some_ppm / 10000, d->some_ppm / 100 % 100);
        return buf;
}

static const char *cell_rate(char *buf, bool have, uint64_t v) {
        if (!have)
                return "-";
        format_size(buf, v);
        strcat(buf, "/s");
        return buf;
}

/* The cgroup last, in the escaped form of names. */
#define TABLE_FORMAT "%-9s %-9s %-9s %-9s %-9s %-10s %-8s %-8s "

void report_table(const Observer *o, FILE *f) {
        fprintf(f, TABLE_FORMAT "CGROUP\n", "MEMORY", "FILE", "DIRTY+WB", "SLAB_RECL", "RECLAIM~", "WRITE",
                "MEM_STL", "IO_STL");
        for (size_t i = 0; i < o->cgroups.n; i++) {
                const CgEntry *e = &o->cgroups.entries[i];
                const CgroupSample *s = cg_entry_sample(e);
                const CgroupSignals *g = &e->signals;
                char a[FORMAT_SIZE_MAX], b[FORMAT_SIZE_MAX], c[FORMAT_SIZE_MAX], d[FORMAT_SIZE_MAX],
                     x[FORMAT_SIZE_MAX], w[FORMAT_SIZE_MAX + 2], m[FORMAT_SIZE_MAX], io[FORMAT_SIZE_MAX];
                bool stat;

                if (e->gone || !s)
                        continue;
                stat = s->have & SAMPLE_MEMORY_STAT;
                fprintf(f, TABLE_FORMAT,
                        cell_size(a, s->have & SAMPLE_MEMORY_CURRENT, s->memory_current),
                        cell_size(b, sample_has_stat(s, STAT_FILE), s->stat[STAT_FILE]),
                        cell_size(c, stat, sample_dirty_bytes(s)),
                        cell_size(d, sample_has_stat(s, STAT_SLAB_RECLAIMABLE), s->stat[STAT_SLAB_RECLAIMABLE]),
                        cell_size(x, stat, sample_reclaimable_bytes(s)),
                        cell_rate(w, g->valid && (s->have & SAMPLE_IO_STAT), g->write_rate),
                        cell_stall(m, g->valid && g->have_memory_stall, &g->memory_stall),
                        cell_stall(io, g->valid && g->have_io_stall, &g->io_stall));
                name_fputs(e->cg->path, f);
                fputc('\n', f);
        }
}
