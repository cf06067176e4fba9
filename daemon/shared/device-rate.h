/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One cgroup's read and write rates on one block device: measured by
 * sampling (io.stat deltas), read by the write point's decision. A plain
 * type kept here so that the pure decision code needs nothing from sampling.
 */
#pragma once

#include <stdint.h>

typedef struct DeviceRate {
        uint32_t major, minor;
        uint64_t rbytes_per_sec, wbytes_per_sec;
        uint64_t ios;                   /* requests (reads and writes) counted over the interval */
} DeviceRate;
