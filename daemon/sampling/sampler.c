/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sampler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
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

const char *const memory_event_keys[_EVENT_MAX] = {
        [EVENT_LOW] = "low",
        [EVENT_HIGH] = "high",
        [EVENT_MAX] = "max",
        [EVENT_OOM] = "oom",
        [EVENT_OOM_KILL] = "oom_kill",
};

const char *const meminfo_keys[_MEMINFO_MAX] = {
        [MEMINFO_MEM_TOTAL] = "MemTotal",
        [MEMINFO_MEM_FREE] = "MemFree",
        [MEMINFO_MEM_AVAILABLE] = "MemAvailable",
        [MEMINFO_BUFFERS] = "Buffers",
        [MEMINFO_CACHED] = "Cached",
        [MEMINFO_DIRTY] = "Dirty",
        [MEMINFO_WRITEBACK] = "Writeback",
        [MEMINFO_SRECLAIMABLE] = "SReclaimable",
        [MEMINFO_SWAP_TOTAL] = "SwapTotal",
        [MEMINFO_SWAP_FREE] = "SwapFree",
};

const char *const vmstat_keys[_VMSTAT_MAX] = {
        [VMSTAT_NR_DIRTY] = "nr_dirty",
        [VMSTAT_NR_WRITEBACK] = "nr_writeback",
        [VMSTAT_NR_DIRTY_THRESHOLD] = "nr_dirty_threshold",
        [VMSTAT_NR_DIRTY_BACKGROUND_THRESHOLD] = "nr_dirty_background_threshold",
        [VMSTAT_WORKINGSET_REFAULT_FILE] = "workingset_refault_file",
};

/* memory.stat is the largest cgroup file read: about 1.5 KiB on 6.1;
 * /proc/vmstat about 5 KiB. */
#define SAMPLE_BUF_SIZE 16384

/* Reads one file; 1 if read, 0 if the cgroup lacks it, -ENODEV if gone. */
static int read_part(Cgroup *cg, CgFile f, bool keep_open, char *buf, size_t *len) {
        int r;

        /* Known missing since the last rescan: no lookup. Had the cgroup gone
         * since, its files kept open would say so (-ENODEV). */
        if (cgroup_file_absent(cg, f))
                return 0;
        r = keep_open ? cgroup_read(cg, f, buf, SAMPLE_BUF_SIZE, len) :
                        cgroup_read_once(cg, f, buf, SAMPLE_BUF_SIZE, len);
        if (r == -ENOENT || r == -ENODEV) {
                if (cgroup_gone(cg))
                        return -ENODEV;
                cgroup_mark_absent(cg, f);
                return 0;
        }
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

/* Room for n devices in the sample's buffer: allocated only when it has held fewer. */
static int io_reserve(CgroupSample *s, size_t n) {
        IoStatDev *io;

        if (n <= s->io_alloc)
                return 0;
        io = reallocarray(s->io, n, sizeof(IoStatDev));
        if (!io)
                return -ENOMEM;
        s->io = io;
        s->io_alloc = (uint8_t) n;
        return 0;
}

static int parse_io_stat(const char *b, size_t l, CgroupSample *s) {
        IoStatDev devs[CG_IO_DEVS_MAX];
        size_t n = 0;
        int r = cg_parse_io_stat(b, l, devs, CG_IO_DEVS_MAX, &n);

        if (r < 0 && r != -E2BIG)
                return r;
        if (io_reserve(s, n) < 0)
                return -ENOMEM;
        if (n > 0)
                memcpy(s->io, devs, n * sizeof(devs[0]));
        s->n_io = (uint8_t) n;
        s->io_truncated = r == -E2BIG;
        return 0;
}

void sample_done(CgroupSample *s) {
        free(s->io);
        s->io = NULL;
        s->n_io = s->io_alloc = 0;
}

int sample_assign(CgroupSample *dst, const CgroupSample *src) {
        IoStatDev *io = dst->io;
        uint8_t alloc = dst->io_alloc;
        int r;

        *dst = *src;
        dst->io = io;
        dst->io_alloc = alloc;
        r = io_reserve(dst, src->n_io);
        if (r < 0) {
                dst->n_io = 0;
                dst->have &= ~SAMPLE_IO_STAT;
                return r;
        }
        if (src->n_io > 0)
                memcpy(dst->io, src->io, src->n_io * sizeof(src->io[0]));
        return 0;
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
        { CG_IO_STAT, SAMPLE_IO_STAT, parse_io_stat },
};

int sampler_read_cgroup(Cgroup *cg, bool keep_open, CgroupSample *ret) {
        char buf[SAMPLE_BUF_SIZE];

        ret->have = ret->garbage = 0;
        ret->stat_found = 0;
        ret->n_io = 0;
        ret->io_truncated = false;
        for (size_t i = 0; i < ELEMENTSOF(sample_parts); i++) {
                size_t len;
                int r = read_part(cg, sample_parts[i].file, keep_open, buf, &len);

                if (r == 0)
                        continue;
                if (r > 0)
                        r = sample_parts[i].parse(buf, len, ret);
                else {
                        ret->n_io = 0;  /* an error: no devices, the buffer kept for the next read */
                        return r;
                }
                if (r == -ENOMEM) {
                        ret->n_io = 0;
                        return r;
                }
                if (r >= 0)
                        ret->have |= sample_parts[i].bit;
                else {
                        ret->garbage |= sample_parts[i].bit;
                        log_debug("%s: %s holds something unparsable", cg->path,
                                  cg_file_name(sample_parts[i].file));
                }
        }
        return 0;
}

int sampler_read_limits(Cgroup *cg, CgroupLimits *ret) {
        static const CgFile files[_LIMIT_MAX] = {
                [LIMIT_HIGH] = CG_MEMORY_HIGH,
                [LIMIT_MAX] = CG_MEMORY_MAX,
                [LIMIT_LOW] = CG_MEMORY_LOW,
                [LIMIT_MIN] = CG_MEMORY_MIN,
        };
        char buf[512];
        size_t len;
        int r;

        ret->have = 0;
        for (size_t i = 0; i < _LIMIT_MAX; i++) {
                r = cgroup_read_once(cg, files[i], buf, sizeof(buf), &len);
                if (r < 0 && cgroup_gone(cg))
                        return -ENODEV;
                if (r >= 0 && cg_parse_u64(buf, len, &ret->limit[i]) >= 0)
                        ret->have |= 1u << i;
        }
        r = cgroup_read_once(cg, CG_MEMORY_EVENTS, buf, sizeof(buf), &len);
        if (r < 0 && cgroup_gone(cg))
                return -ENODEV;
        if (r >= 0 && cg_parse_flat_keyed(buf, len, memory_event_keys, _EVENT_MAX, ret->events, NULL) >= 0)
                ret->have |= LIMITS_HAVE_EVENTS;
        return 0;
}

int sampler_read_system(HostRoot *h, SystemSample *ret) {
        char buf[SAMPLE_BUF_SIZE];
        size_t len;

        ret->have = ret->garbage = 0;
#define READ_SYSTEM(file, bit, parse_expr)                                           \
        do {                                                                         \
                if (host_read(h, file, buf, sizeof(buf), &len) < 0)                  \
                        break;                                                       \
                if ((parse_expr) >= 0)                                               \
                        ret->have |= bit;                                            \
                else                                                                 \
                        ret->garbage |= bit;                                         \
        } while (0)

        READ_SYSTEM(HOST_PRESSURE_MEMORY, SYSTEM_MEMORY_PRESSURE, cg_parse_psi(buf, len, &ret->memory_pressure));
        READ_SYSTEM(HOST_PRESSURE_IO, SYSTEM_IO_PRESSURE, cg_parse_psi(buf, len, &ret->io_pressure));
        READ_SYSTEM(HOST_MEMINFO, SYSTEM_MEMINFO,
                    cg_parse_meminfo(buf, len, meminfo_keys, _MEMINFO_MAX, ret->meminfo, &ret->meminfo_found));
        READ_SYSTEM(HOST_VMSTAT, SYSTEM_VMSTAT,
                    cg_parse_flat_keyed(buf, len, vmstat_keys, _VMSTAT_MAX, ret->vmstat, &ret->vmstat_found));
#undef READ_SYSTEM
        return 0;
}
