/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The converters of the configuration's values, one per kind of value a key
 * takes: private to the config layer, named by conf.c's key tables. Each
 * takes the text of a value, the place it goes and the key's minimum (sizes
 * only; the others ignore it), and returns 0 or a negative errno: -EDOM for
 * a size below the minimum (or 0% where a minimum applies), which the caller
 * explains with the key's reason; -ERANGE for a value out of the key's range;
 * -EINVAL for one it cannot read. Nothing is written to the destination on an
 * error.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef int (*ConfValueParser)(const char *value, void *dest, uint64_t min);

/* Durations (uint64_t µs). Interval=, RescanInterval=, the hold times: 100ms to 1h. */
int cv_duration_range(const char *v, void *dest, uint64_t min);
/* IOLatencyTarget=: "off" (POLICY_LATENCY_OFF, kept apart from unset) or 1ms to 10s. */
int cv_latency_target(const char *v, void *dest, uint64_t min);
/* IOLatencyTargetByFilesystem=: an array of targets by filesystem type, replaced whole. */
int cv_fs_latency_targets(const char *v, void *dest, uint64_t min);
/* PressureWindow=: what the kernel takes as a PSI window, 500ms to 10s. */
int cv_pressure_window(const char *v, void *dest, uint64_t min);
/* TextfileInterval=: 1s to 1h. */
int cv_textfile_interval(const char *v, void *dest, uint64_t min);
/* SaveInterval=: 0 (at stop only), or 1s to 1h. */
int cv_history_save_interval(const char *v, void *dest, uint64_t min);

/* Percentages (uint32_t ppm): any, or above 0%. */
int cv_percent(const char *v, void *dest, uint64_t min);
int cv_percent_nonzero(const char *v, void *dest, uint64_t min);

/* Strings (char *, replaced): an absolute path, one that fits sun_path, one or nothing (NULL), a group. */
int cv_abs_path(const char *v, void *dest, uint64_t min);
int cv_socket_path(const char *v, void *dest, uint64_t min);
int cv_abs_path_or_empty(const char *v, void *dest, uint64_t min);
int cv_group(const char *v, void *dest, uint64_t min);

/* Counts (uint32_t) up to their key's maximum. */
int cv_top_cgroups(const char *v, void *dest, uint64_t min);
int cv_history_samples(const char *v, void *dest, uint64_t min);
int cv_history_cgroups(const char *v, void *dest, uint64_t min);

/* Names: a log level (int), TopBy= (MetricsTopBy), a policy's Mode= (PolicyMode); Priority= (unsigned). */
int cv_log_level(const char *v, void *dest, uint64_t min);
int cv_top_by(const char *v, void *dest, uint64_t min);
int cv_mode(const char *v, void *dest, uint64_t min);
int cv_priority(const char *v, void *dest, uint64_t min);
int cv_bool(const char *v, void *dest, uint64_t min);

/* Sizes of at least `min`: a size (uint64_t), a size or max, a size or a percentage (SizeOrPercent). */
int cv_size(const char *v, void *dest, uint64_t min);
int cv_size_or_max(const char *v, void *dest, uint64_t min);
int cv_size_or_percent(const char *v, void *dest, uint64_t min);

/* Whether `parse` reads a size (then a refused value is explained as one). */
bool cv_takes_size(ConfValueParser parse);
