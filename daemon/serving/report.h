/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The observer's picture printed for people (a table) and for programs
 * (JSON, schema in docs/sample-json.md). Used by --sample-once.
 */
#pragma once

#include <stdio.h>

#include "observer.h"

void report_json(const Observer *o, FILE *f);
void report_table(const Observer *o, FILE *f);
