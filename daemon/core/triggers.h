/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The PSI triggers the daemon keeps armed, following the policies: the
 * host's memory and io always, a cgroup's memory while its policy has a
 * PressureTarget=, its io while it is protected. Bounded; a trigger the
 * kernel refused is remembered so that it is not retried (and warned
 * about) on every rescan.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "conf.h"
#include "observer.h"
#include "psi-trigger.h"

/* Bound on PSI triggers (each costs the kernel a poller); more are refused. */
#define TRIGGERS_MAX 1024

typedef struct TriggerSet {
        sd_event *event;
        PsiTrigger **triggers;
        size_t n;
        PsiTriggerHandler handler;
        void *userdata;
        bool full_logged;
        bool window_fallback_logged;
} TriggerSet;

void trigger_set_init(TriggerSet *s, sd_event *event, PsiTriggerHandler handler, void *userdata);
void trigger_set_clear(TriggerSet *s);

/* Arms what the policies ask for, drops what they no longer ask for. */
void trigger_set_reconcile(TriggerSet *s, Observer *o, const Config *c);

/* Drops one trigger (its cgroup went away). */
void trigger_set_remove(TriggerSet *s, PsiTrigger *t);

/* Forgets the triggers the kernel refused, so that new settings try them again. */
void trigger_set_forget_failed(TriggerSet *s);

/* Triggers armed in the kernel. */
size_t trigger_set_armed(const TriggerSet *s);
