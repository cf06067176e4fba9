/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading one cgroup's or the host's counters into plain structs: what the
 * daemon samples every tick (memory.current, memory.stat, pressure, io.stat),
 * what it reads at each rescan (limits and memory.events, which change
 * rarely), and the system-wide files. No allocation, no derived figures.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgfs.h"
#include "cgparse.h"
#include "hostfs.h"

typedef enum MemoryStatKey {
        STAT_ANON,
        STAT_FILE,
        STAT_SHMEM,
        STAT_FILE_DIRTY,
        STAT_FILE_WRITEBACK,
        STAT_SLAB_RECLAIMABLE,
        STAT_SLAB_UNRECLAIMABLE,
        STAT_WORKINGSET_REFAULT_FILE,
        STAT_PGSCAN,
        STAT_PGSTEAL,
        _STAT_MAX,
} MemoryStatKey;

extern const char *const memory_stat_keys[_STAT_MAX];

/* Bits of CgroupSample.have / .garbage: which file was read and parsed. */
enum {
        SAMPLE_MEMORY_CURRENT = 1u << 0,
        SAMPLE_MEMORY_STAT = 1u << 1,
        SAMPLE_MEMORY_PRESSURE = 1u << 2,
        SAMPLE_IO_PRESSURE = 1u << 3,
        SAMPLE_IO_STAT = 1u << 4,
};

/* Devices kept per cgroup from io.stat; more are counted, not kept. */
#define CG_IO_DEVS_MAX 8

typedef struct CgroupSample {
        unsigned have;          /* SAMPLE_* read and parsed */
        unsigned garbage;       /* SAMPLE_* whose file held something unparsable */
        uint64_t memory_current;
        uint64_t stat[_STAT_MAX];       /* as the kernel gives them: bytes, or events for
                                         * workingset_refault_file, pgscan, pgsteal */
        uint64_t stat_found;
        PsiStats memory_pressure;
        PsiStats io_pressure;
        IoStatDev *io;          /* n_io devices (at most CG_IO_DEVS_MAX) in a buffer of io_alloc, NULL
                                 * until a device is seen: most cgroups have one or two, and a table of
                                 * 50,000 entries holds a sample each. The buffer is kept for the next
                                 * sample read or assigned into it; sample_done() frees it */
        uint8_t n_io, io_alloc;
        bool io_truncated;
} CgroupSample;

/* Frees what a sample holds; it is then empty (no devices), its figures kept. */
void sample_done(CgroupSample *s);
/* Makes `dst` (zeroed before its first use) a copy of `src`, in dst's own device buffer, grown only
 * when src has more devices than it held yet. -ENOMEM leaves dst with src's figures but no devices. */
int sample_assign(CgroupSample *dst, const CgroupSample *src);

static inline bool sample_has_stat(const CgroupSample *s, MemoryStatKey k) {
        return (s->have & SAMPLE_MEMORY_STAT) && (s->stat_found & (UINT64_C(1) << k));
}

/* A memory.stat figure, 0 when the sample lacks it. */
static inline uint64_t sample_stat(const CgroupSample *s, MemoryStatKey k) {
        return sample_has_stat(s, k) ? s->stat[k] : 0;
}

/*
 * Reads one cgroup's per-tick files, keeping them open for the next read if
 * `keep_open` (a cgroup sampled every tick), closing them otherwise. A file the cgroup lacks leaves its bit
 * out of `have`; garbage sets its bit in `garbage`. Returns -ENODEV if the
 * cgroup was removed, -ENOMEM, or 0. `ret` (zeroed before its first use) is
 * overwritten, its device buffer reused; on an error it has no devices.
 */
int sampler_read_cgroup(Cgroup *cg, bool keep_open, CgroupSample *ret);

typedef enum LimitKey {
        LIMIT_HIGH,
        LIMIT_MAX,
        LIMIT_LOW,
        LIMIT_MIN,
        _LIMIT_MAX,
} LimitKey;

typedef enum EventKey {
        EVENT_LOW,
        EVENT_HIGH,
        EVENT_MAX,
        EVENT_OOM,
        EVENT_OOM_KILL,
        _EVENT_MAX,
} EventKey;

extern const char *const memory_event_keys[_EVENT_MAX];

typedef struct CgroupLimits {
        unsigned have;          /* bit per LimitKey, bit _LIMIT_MAX for events */
        uint64_t limit[_LIMIT_MAX];     /* bytes; UINT64_MAX for "max" */
        uint64_t events[_EVENT_MAX];
} CgroupLimits;

#define LIMITS_HAVE_EVENTS (1u << _LIMIT_MAX)

/* Reads memory.high/max/low/min and memory.events. -ENODEV if removed. */
int sampler_read_limits(Cgroup *cg, CgroupLimits *ret);

typedef enum MeminfoKey {
        MEMINFO_MEM_TOTAL,
        MEMINFO_MEM_FREE,
        MEMINFO_MEM_AVAILABLE,
        MEMINFO_BUFFERS,
        MEMINFO_CACHED,
        MEMINFO_DIRTY,
        MEMINFO_WRITEBACK,
        MEMINFO_SRECLAIMABLE,
        MEMINFO_SWAP_TOTAL,
        MEMINFO_SWAP_FREE,
        _MEMINFO_MAX,
} MeminfoKey;

extern const char *const meminfo_keys[_MEMINFO_MAX];

typedef enum VmstatKey {
        VMSTAT_NR_DIRTY,
        VMSTAT_NR_WRITEBACK,
        VMSTAT_NR_DIRTY_THRESHOLD,
        VMSTAT_NR_DIRTY_BACKGROUND_THRESHOLD,
        VMSTAT_WORKINGSET_REFAULT_FILE,
        _VMSTAT_MAX,
} VmstatKey;

extern const char *const vmstat_keys[_VMSTAT_MAX];

enum {
        SYSTEM_MEMORY_PRESSURE = 1u << 0,
        SYSTEM_IO_PRESSURE = 1u << 1,
        SYSTEM_MEMINFO = 1u << 2,
        SYSTEM_VMSTAT = 1u << 3,
};

typedef struct SystemSample {
        unsigned have;
        unsigned garbage;
        PsiStats memory_pressure;
        PsiStats io_pressure;
        uint64_t meminfo[_MEMINFO_MAX];         /* bytes */
        uint64_t meminfo_found;
        uint64_t vmstat[_VMSTAT_MAX];           /* pages or events, as the kernel gives them */
        uint64_t vmstat_found;
} SystemSample;

/* A /proc/meminfo figure (bytes), or `fallback` when the sample lacks it (or there is none). */
static inline uint64_t system_meminfo(const SystemSample *s, MeminfoKey k, uint64_t fallback) {
        return s && (s->meminfo_found & (UINT64_C(1) << k)) ? s->meminfo[k] : fallback;
}

/* Reads the host's files; what is missing or garbage is left out of `have`. */
int sampler_read_system(HostRoot *h, SystemSample *ret);
