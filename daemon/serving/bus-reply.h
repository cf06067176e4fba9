/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The observer's figures as D-Bus dictionaries (a{sv}), under the same names
 * and in the same units as --sample-once's JSON (docs/sample-json.md), so a
 * program reads one schema from either. A figure the daemon does not have is
 * left out rather than sent as a made-up number.
 */
#pragma once

#include <systemd/sd-bus.h>

#include "conf.h"
#include "observer.h"

/* One cgroup in brief: what `mdctl list` and `top` show. */
int bus_append_cgroup_summary(sd_bus_message *m, const Observer *o, const CgEntry *e);
/* The same summary as one JSON object, as mdctl prints the dictionary above; `now` (CLOCK_MONOTONIC)
 * dates its sample's age. A negative errno; f's own errors are the caller's to check. */
int json_append_cgroup_summary(FILE *f, const CgEntry *e, uint64_t now);
/* One cgroup in full: every sample, limit and signal, and with the daemon's settings d (NULL: left
 * out) the IOLatencyTarget= in force for it. */
int bus_append_cgroup(sd_bus_message *m, const Observer *o, const CgEntry *e, const DaemonSettings *d);
/* The host: pressure, meminfo, global dirty state and thresholds. */
int bus_append_system(sd_bus_message *m, const Observer *o);

/* Entries of an a{sv} being built. */
int bus_dict_u64(sd_bus_message *m, const char *key, uint64_t v);
int bus_dict_str(sd_bus_message *m, const char *key, const char *v);
/* A limit (memory.high, a wbps): a number, or "max" for UINT64_MAX. */
int bus_dict_limit(sd_bus_message *m, const char *key, uint64_t v);
int bus_dict_strv(sd_bus_message *m, const char *key, const char *const *v, size_t n);
/* A cgroup path, a unit name or a line of text that may hold them, in the escaped form of names
 * (name-escape.h): D-Bus carries only valid UTF-8, the kernel's names may be any bytes. */
int bus_dict_name(sd_bus_message *m, const char *key, const char *v);
int bus_dict_namev(sd_bus_message *m, const char *key, const char *const *v, size_t n);
/* Opens a nested a{sv} under `key`; close with bus_dict_close(). */
int bus_dict_open(sd_bus_message *m, const char *key);
int bus_dict_close(sd_bus_message *m);
