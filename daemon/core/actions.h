/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one-shot actions an operator asked for (a reclaim, a writeback), each
 * under an id that the control API hands back, kept in a bounded set of the
 * most recent ones with their state and result, so that a caller can ask for
 * the outcome later or wait for it. Bookkeeping only: no file, no loop.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How many actions are kept; a new one replaces the oldest finished. */
#define ACTIONS_MAX 64
#define ACTION_PATH_MAX 1024
#define ACTION_TEXT_MAX (ACTION_PATH_MAX + 256)

typedef enum ActionKind {
        ACTION_RECLAIM,
        ACTION_WRITEBACK,
        _ACTION_KIND_MAX,
} ActionKind;

typedef enum ActionState {
        ACTION_QUEUED,
        ACTION_RUNNING,
        ACTION_DONE,
        ACTION_FAILED,
        _ACTION_STATE_MAX,
} ActionState;

typedef struct Action {
        uint64_t id;                    /* 0: a free slot */
        ActionKind kind;
        ActionState state;
        char path[ACTION_PATH_MAX];     /* the cgroup, escaped as the API shows names (cut if longer) */
        char unit[256];                 /* "" when none */
        char asked_by[64];              /* "uid 0 (pid 4242)" */
        bool cache_only;                /* reclaim */
        uint64_t bytes_asked;           /* reclaim: what the request came to (0: nothing reclaimable) */
        uint64_t bytes_freed;           /* reclaim: memory.current before less after */
        uint64_t files;                 /* writeback: files written back */
        uint64_t dirty_before, dirty_after;     /* writeback: file_dirty + file_writeback; UINT64_MAX: unknown */
        bool budget_reached;            /* stopped at its time budget (or at stop) */
        uint64_t queued_usec, started_usec, finished_usec;      /* CLOCK_REALTIME; 0: not yet */
        int error;                      /* failed: a negative errno */
        char message[ACTION_TEXT_MAX];  /* the result in words (the event's message), or why it failed */
} Action;

typedef struct ActionLog {
        Action slots[ACTIONS_MAX];
        uint64_t next_id;               /* the id the next action gets; ids start at 1 with each run */
} ActionLog;

const char *action_kind_to_string(ActionKind k);
const char *action_state_to_string(ActionState s);

void action_log_init(ActionLog *l);

/*
 * A new action, queued at `now`: its slot, with its id set. NULL when all
 * ACTIONS_MAX kept are still queued or running (none may be forgotten).
 */
Action *action_log_add(ActionLog *l, ActionKind kind, uint64_t now);

/* Takes back the newest action (its request could not be queued); its id is not given again. */
void action_log_drop(ActionLog *l, Action *a);

/* The action with this id, or NULL. */
Action *action_log_find(ActionLog *l, uint64_t id);

/* The lowest id kept (0: none), for saying why an id is not found. */
uint64_t action_log_first_id(const ActionLog *l);

/* The action ends: done, or failed with `error` (negative errno). */
void action_finish(Action *a, int error, uint64_t started, uint64_t finished);
