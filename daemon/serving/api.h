/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * org.mdreclaim.Manager1 on /org/mdreclaim/Manager: the control API
 * (docs/control-api.md) served on the control socket's transport. Reads are
 * for anyone who can reach the socket; changes need uid 0 or AdminGroup=, and
 * a refused caller changes nothing. Split by what it does: api.c (the
 * vtable, the Event and ThrottlesChanged signals and their fan-out),
 * api-access.c (the caller's rights, error names, naming a cgroup),
 * api-read.c (read methods), api-history.c (the sample history), api-change.c (methods that change
 * something), api-actions.c (one-shot actions: Reclaim, Writeback, GetAction, ListActions,
 * ActionFinished); api-internal.h is what they share.
 */
#pragma once

#include "manager.h"

typedef struct Api Api;

/* Serves the API on a control socket at `path`; the manager's events become its Event signal. */
int api_new(Manager *m, const char *path, Api **ret);
Api *api_free(Api *a);
static inline void api_freep(Api **a) {
        if (*a)
                api_free(*a);
}
