/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "actions.h"

#include <string.h>

static const char *const kind_names[_ACTION_KIND_MAX] = {
        [ACTION_RECLAIM] = "reclaim",
        [ACTION_WRITEBACK] = "writeback",
};

static const char *const state_names[_ACTION_STATE_MAX] = {
        [ACTION_QUEUED] = "queued",
        [ACTION_RUNNING] = "running",
        [ACTION_DONE] = "done",
        [ACTION_FAILED] = "failed",
};

const char *action_kind_to_string(ActionKind k) {
        return k < _ACTION_KIND_MAX ? kind_names[k] : "unknown";
}

const char *action_state_to_string(ActionState s) {
        return s < _ACTION_STATE_MAX ? state_names[s] : "unknown";
}

void action_log_init(ActionLog *l) {
        memset(l, 0, sizeof(*l));
        l->next_id = 1;
}

static bool finished(const Action *a) {
        return a->state == ACTION_DONE || a->state == ACTION_FAILED;
}

/* A free slot, else the one of the oldest finished action; NULL when every one is still unfinished. */
static Action *slot_for_new(ActionLog *l) {
        Action *oldest = NULL;

        for (size_t i = 0; i < ACTIONS_MAX; i++) {
                Action *a = &l->slots[i];

                if (a->id == 0)
                        return a;
                if (finished(a) && (!oldest || a->id < oldest->id))
                        oldest = a;
        }
        return oldest;
}

Action *action_log_add(ActionLog *l, ActionKind kind, uint64_t now) {
        Action *a = slot_for_new(l);

        if (!a)
                return NULL;
        memset(a, 0, sizeof(*a));
        a->id = l->next_id++;
        a->kind = kind;
        a->state = ACTION_QUEUED;
        a->queued_usec = now;
        a->dirty_before = a->dirty_after = UINT64_MAX;
        return a;
}

void action_log_drop(ActionLog *l, Action *a) {
        memset(a, 0, sizeof(*a));
}

Action *action_log_find(ActionLog *l, uint64_t id) {
        if (id == 0)
                return NULL;
        for (size_t i = 0; i < ACTIONS_MAX; i++)
                if (l->slots[i].id == id)
                        return &l->slots[i];
        return NULL;
}

uint64_t action_log_first_id(const ActionLog *l) {
        uint64_t first = 0;

        for (size_t i = 0; i < ACTIONS_MAX; i++)
                if (l->slots[i].id && (!first || l->slots[i].id < first))
                        first = l->slots[i].id;
        return first;
}

void action_finish(Action *a, int error, uint64_t started, uint64_t finished_usec) {
        a->state = error < 0 ? ACTION_FAILED : ACTION_DONE;
        a->error = error < 0 ? error : 0;
        if (started)
                a->started_usec = started;
        a->finished_usec = finished_usec;
}
