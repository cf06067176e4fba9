/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sampler.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "json-out.h"
#include "log.h"
#include "parse-util.h"
#include "policy.h"
#include "util.h"

const char *const memory_stat_keys[_STAT_MAX] = {
        [STAT_ANON] = "anon",
        [STAT_FILE] = "file",
        [STAT_SHMEM] = "shmem",
        [STAT_FILE_DIRTY] = "file_dirty",
        [STAT_FILE_WRITEBACK] = "file_writeback",
        [STAT_SLAB_RECLAIMABLE] = "slab_reclaimable",
        [STAT_SLAB_UNRECLAIMABLE] = "slab_unreclaimable",
        [STAT_WORKINGSET_REFAULT_FILE] = "workingset_refault_file",
        [STAT_PGSCAN] = "pgscan",
        [STAT_PGSTEAL] = "pgsteal",
};

/* memory.stat is the largest file read: about 1.5 KiB on 6.1. */
#define SAMPLE_BUF_SIZE 8192

/* Reads one file; 1 if read, 0 if the cgroup lacks it, -ENOENT/-ENODEV if gone. */
static int read_part(Cgroup *cg, CgFile f, char *buf, size_t *len) {
        int r = cgroup_read(cg, f, buf, SAMPLE_BUF_SIZE, len);

        if (r == -ENOENT || r == -ENODEV)
                return cgroup_gone(cg) ? -ENODEV : 0;
        if (r < 0) {
                log_debug_errno(r, "%s: reading %s failed: %m", cg->path, cg_file_name(f));
                return 0;
        }
        return 1;
}

static int parse_current(const char *b, size_t l, CgroupSample *s) {
        return cg_parse_u64(b, l, &s->memory_current);
}

static int parse_stat(const char *b, size_t l, CgroupSample *s) {
        return cg_parse_flat_keyed(b, l, memory_stat_keys, _STAT_MAX, s->stat, &s->stat_found);
}

static int parse_memory_pressure(const char *b, size_t l, CgroupSample *s) {
        return cg_parse_psi(b, l, &s->memory_pressure);
}

static int parse_io_pressure(const char *b, size_t l, CgroupSample *s) {
        return cg_parse_psi(b, l, &s->io_pressure);
}

static const struct {
        CgFile file;
        unsigned bit;
        int (*parse)(const char *buf, size_t len, CgroupSample *s);
} sample_parts[] = {
        { CG_MEMORY_CURRENT, SAMPLE_MEMORY_CURRENT, parse_current },
        { CG_MEMORY_STAT, SAMPLE_MEMORY_STAT, parse_stat },
        { CG_MEMORY_PRESSURE, SAMPLE_MEMORY_PRESSURE, parse_memory_pressure },
        { CG_IO_PRESSURE, SAMPLE_IO_PRESSURE, parse_io_pressure },
};

int sampler_read_cgroup(Cgroup *cg, CgroupSample *ret) {
        char buf[SAMPLE_BUF_SIZE];
        CgroupSample s = {};

        for (size_t i = 0; i < ELEMENTSOF(sample_parts); i++) {
                size_t len;
                int r = read_part(cg, sample_parts[i].file, buf, &len);

                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                if (sample_parts[i].parse(buf, len, &s) >= 0)
                        s.have |= sample_parts[i].bit;
                else {
                        s.garbage |= sample_parts[i].bit;
                        log_debug("%s: %s holds something unparsable", cg->path,
                                  cg_file_name(sample_parts[i].file));
                }
        }
        *ret = s;
        return 0;
}

static void print_psi_line_json(FILE *f, const PsiLine *l) {
        fprintf(f, "{\"avg10\":%u.%02u,\"avg60\":%u.%02u,\"avg300\":%u.%02u,\"total\":%" PRIu64 "}",
                l->avg10 / 100, l->avg10 % 100, l->avg60 / 100, l->avg60 % 100,
                l->avg300 / 100, l->avg300 % 100, l->total);
}

static void print_psi_json(FILE *f, bool have, const PsiStats *p) {
        if (!have) {
                fputs("null", f);
                return;
        }
        fputs("{\"some\":", f);
        print_psi_line_json(f, &p->some);
        fputs(",\"full\":", f);
        if (p->has_full)
                print_psi_line_json(f, &p->full);
        else
                fputs("null", f);
        fputc('}', f);
}

static void print_sample_json(FILE *f, const char *path, uint64_t id, const CgroupSample *s) {
        bool stat = s->have & SAMPLE_MEMORY_STAT;

        fputs("{\"path\":", f);
        json_string(f, path);
        fprintf(f, ",\"id\":%" PRIu64 ",\"unit\":", id);
        json_string_or_null(f, cgroup_path_unit(path));
        fputs(",\"memory_current\":", f);
        json_u64_or_null(f, s->have & SAMPLE_MEMORY_CURRENT, s->memory_current);
        for (size_t k = 0; k < _STAT_MAX; k++) {
                fprintf(f, ",\"%s\":", memory_stat_keys[k]);
                json_u64_or_null(f, stat && (s->stat_found & (UINT64_C(1) << k)), s->stat[k]);
        }
        fputs(",\"memory_pressure\":", f);
        print_psi_json(f, s->have & SAMPLE_MEMORY_PRESSURE, &s->memory_pressure);
        fputs(",\"io_pressure\":", f);
        print_psi_json(f, s->have & SAMPLE_IO_PRESSURE, &s->io_pressure);
        fputs(",\"unparsable\":[", f);
        for (size_t i = 0, n = 0; i < ELEMENTSOF(sample_parts); i++)
                if (s->garbage & sample_parts[i].bit) {
                        fputs(n++ ? "," : "", f);
                        json_string(f, cg_file_name(sample_parts[i].file));
                }
        fputs("]}", f);
}

static const char *cell_size(char *buf, bool have, uint64_t v) {
        return have ? format_size(buf, v) : "-";
}

static const char *cell_stat(char *buf, const CgroupSample *s, MemoryStatKey k) {
        return cell_size(buf, (s->have & SAMPLE_MEMORY_STAT) && (s->stat_found & (UINT64_C(1) << k)),
                         s->stat[k]);
}

static const char *cell_psi(char *buf, bool have, const PsiLine *l) {
        if (!have)
                return "-";
        snprintf(buf, FORMAT_SIZE_MAX, "%u.%02u%%", l->avg10 / 100, l->avg10 % 100);
        return buf;
}

#define TABLE_FORMAT "%-10s %-10s %-10s %-10s %-10s %-9s %-9s %s\n"

static void print_sample_table(FILE *f, const char *path, const CgroupSample *s) {
        char a[FORMAT_SIZE_MAX], b[FORMAT_SIZE_MAX], c[FORMAT_SIZE_MAX], d[FORMAT_SIZE_MAX],
             e[FORMAT_SIZE_MAX], g[FORMAT_SIZE_MAX], h[FORMAT_SIZE_MAX];

        fprintf(f, TABLE_FORMAT,
                cell_size(a, s->have & SAMPLE_MEMORY_CURRENT, s->memory_current),
                cell_stat(b, s, STAT_FILE), cell_stat(c, s, STAT_FILE_DIRTY),
                cell_stat(d, s, STAT_FILE_WRITEBACK), cell_stat(e, s, STAT_SLAB_RECLAIMABLE),
                cell_psi(g, s->have & SAMPLE_MEMORY_PRESSURE, &s->memory_pressure.some),
                cell_psi(h, s->have & SAMPLE_IO_PRESSURE, &s->io_pressure.some), path);
}

typedef struct SampleOnce {
        const CgRoot *root;
        SampleFormat format;
        FILE *out;
        int printed;
        unsigned gone;
} SampleOnce;

static int sample_once_one(const char *path, uint64_t id, void *userdata) {
        SampleOnce *so = userdata;
        _cleanup_(cgroup_freep) Cgroup *cg = NULL;
        CgroupSample s;
        int r;

        r = cgroup_open(so->root, path, &cg);
        if (r >= 0)
                r = sampler_read_cgroup(cg, &s);
        if (r == -ENOENT || r == -ENODEV) {
                log_debug("%s: removed while sampling, skipped", path);
                so->gone++;
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "%s: cannot sample: %m", path);

        if (so->format == SAMPLE_FORMAT_JSON) {
                fputs(so->printed ? ",\n" : "\n", so->out);
                print_sample_json(so->out, path, cg->id, &s);
        } else
                print_sample_table(so->out, path, &s);
        so->printed++;
        return 0;
}

int sampler_sample_once(const CgRoot *root, SampleFormat format, FILE *out) {
        SampleOnce so = { .root = root, .format = format, .out = out };
        int r;

        if (format == SAMPLE_FORMAT_JSON) {
                fputs("{\"cgroup_root\":", out);
                json_string(out, root->path);
                fputs(",\"cgroups\":[", out);
        } else
                fprintf(out, TABLE_FORMAT, "MEMORY", "FILE", "DIRTY", "WRITEBACK", "SLAB_RECL",
                        "MEM_PSI", "IO_PSI", "CGROUP");
        r = cg_root_walk(root, sample_once_one, &so);
        if (format == SAMPLE_FORMAT_JSON)
                fputs("\n]}\n", out);
        if (r < 0)
                return r;
        if (so.gone > 0)
                log_info("%u cgroup(s) went away while being sampled", so.gone);
        return so.printed;
}
