/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the daemon reads of one cgroup each tick, and `--sample-once`, which
 * reads every cgroup once and prints it as a table or as JSON.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cgfs.h"
#include "cgparse.h"

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

/* Which parts of a sample were read (bits of CgroupSample.have). */
enum {
        SAMPLE_MEMORY_CURRENT = 1u << 0,
        SAMPLE_MEMORY_STAT = 1u << 1,
        SAMPLE_MEMORY_PRESSURE = 1u << 2,
        SAMPLE_IO_PRESSURE = 1u << 3,
};

typedef struct CgroupSample {
        unsigned have;          /* SAMPLE_* read and parsed */
        unsigned garbage;       /* SAMPLE_* whose file held something unparsable */
        uint64_t memory_current;
        uint64_t stat[_STAT_MAX];
        uint64_t stat_found;    /* bit per MemoryStatKey present in memory.stat */
        PsiStats memory_pressure;
        PsiStats io_pressure;
} CgroupSample;

/*
 * Reads one cgroup. Files the cgroup lacks leave their bit out of `have`;
 * garbage sets its bit in `garbage`. Returns -ENOENT or -ENODEV if the cgroup
 * was removed, -ENOMEM, or 0.
 */
int sampler_read_cgroup(Cgroup *cg, CgroupSample *ret);

typedef enum SampleFormat {
        SAMPLE_FORMAT_TABLE,
        SAMPLE_FORMAT_JSON,
} SampleFormat;

/* Reads every cgroup under `root` once and prints it. Returns the number of
 * cgroups printed or a negative errno. */
int sampler_sample_once(const CgRoot *root, SampleFormat format, FILE *out);
