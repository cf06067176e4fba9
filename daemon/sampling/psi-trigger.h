/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PSI triggers as sd-event sources: the kernel wakes us when a cgroup (or
 * the host) stalls more than a threshold within a window, so the daemon
 * reacts within milliseconds instead of at its next tick. A trigger whose
 * cgroup is removed reports EPOLLERR and is closed; no busy loop.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

typedef enum PsiResource {
        PSI_RESOURCE_MEMORY,
        PSI_RESOURCE_IO,
        _PSI_RESOURCE_MAX,
} PsiResource;

const char *psi_resource_to_string(PsiResource r);

#define PSI_WINDOW_MIN_USEC UINT64_C(500000)
#define PSI_WINDOW_MAX_USEC UINT64_C(10000000)
/* Without CAP_SYS_RESOURCE, 6.1 accepts only windows that are multiples of this. */
#define PSI_WINDOW_UNPRIVILEGED_USEC UINT64_C(2000000)

/* A trigger's source runs before any other of the loop's that is pending at the same time (the
 * tick's slices, the control API): a wake-up is what the daemon must not keep waiting. */
#define PSI_TRIGGER_PRIORITY SD_EVENT_PRIORITY_IMPORTANT

typedef struct PsiTrigger PsiTrigger;

/* Called when the trigger fires (dead == false) or its cgroup went away
 * (dead == true; the trigger is already disabled and must be freed). */
typedef void (*PsiTriggerHandler)(PsiTrigger *t, bool dead, void *userdata);

struct PsiTrigger {
        uint64_t cgroup_id;             /* 0: the host */
        PsiResource resource;
        uint64_t threshold_usec;        /* as armed (after any fallback) */
        uint64_t window_usec;
        int fd;
        sd_event_source *source;
        uint64_t fired;
        uint64_t last_fired_usec;       /* CLOCK_MONOTONIC */
        PsiTriggerHandler handler;
        void *userdata;
        bool mark;                      /* for the owner's reconciliation */
};

/* threshold_ppm of window_usec, at least 1 µs. */
uint64_t psi_threshold_usec(uint32_t threshold_ppm, uint64_t window_usec);

/*
 * Arms a "some" trigger on `name` below `dirfd` and adds it to `event`. If the
 * kernel refuses the window (-EINVAL) and it is not a multiple of 2 s, retries
 * once with the next multiple of 2 s and the same share of it, and says so
 * (*ret_fell_back). Errors are the kernel's, returned for the caller to report.
 */
int psi_trigger_new(sd_event *event, int dirfd, const char *name, uint64_t cgroup_id, PsiResource resource,
                    uint32_t threshold_ppm, uint64_t window_usec, PsiTriggerHandler handler,
                    void *userdata, PsiTrigger **ret, bool *ret_fell_back);
PsiTrigger *psi_trigger_free(PsiTrigger *t);

/* A record of a trigger that could not be armed (fd -1, no source), so
 * that the owner does not retry, and warn, on every rescan. */
PsiTrigger *psi_trigger_new_failed(uint64_t cgroup_id, PsiResource resource, uint64_t threshold_usec,
                                   uint64_t window_usec);

static inline bool psi_trigger_armed(const PsiTrigger *t) {
        return t->fd >= 0;
}
