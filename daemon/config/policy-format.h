/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A policy's effective settings written back in the syntax its file takes
 * (sizes as "256M", percentages as "0.1%"), so that `mdctl policy show` can
 * print every key, defaults included, and each value reads back the same.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

#define POLICY_VALUE_MAX 64

/* Exact size: the largest K/M/G/T/P/E unit that divides it, else plain bytes. */
const char *format_size_exact(char buf[static POLICY_VALUE_MAX], uint64_t bytes);
/* IOLatencyTarget=: "" unset (0), "off", or the duration in its largest exact unit. */
const char *format_latency(char buf[static POLICY_VALUE_MAX], uint64_t usec);
/* Parts per million as a percentage with no trailing zeros: "10%", "0.1%". */
const char *format_percent(char buf[static POLICY_VALUE_MAX], uint32_t ppm);

/*
 * The value of `key` (any key of [Policy] but Match=) in `p`, or "" when it
 * is unset and its default means "none". -ENOENT: not a key formatted here.
 */
int policy_format_value(const Policy *p, const char *key, char buf[static POLICY_VALUE_MAX]);
