/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "psi-trigger.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "fileio.h"
#include "log.h"
#include "util.h"

const char *psi_resource_to_string(PsiResource r) {
        return r == PSI_RESOURCE_MEMORY ? "memory" : r == PSI_RESOURCE_IO ? "io" : NULL;
}

uint64_t psi_threshold_usec(uint32_t threshold_ppm, uint64_t window_usec) {
        uint64_t t = window_usec * threshold_ppm / 1000000;
        return MAX(MIN(t, window_usec), UINT64_C(1));
}

static int on_trigger(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PsiTrigger *t = userdata;

        if (revents & (EPOLLERR | EPOLLHUP)) {
                /* The cgroup was removed: stop polling before anything else. */
                (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                t->handler(t, true, t->userdata);
                return 0;
        }
        if (revents & EPOLLPRI) {
                (void) sd_event_now(sd_event_source_get_event(s), CLOCK_MONOTONIC, &t->last_fired_usec);
                t->fired++;
                t->handler(t, false, t->userdata);
        }
        return 0;
}

static int arm(int dirfd, const char *name, uint64_t threshold, uint64_t window) {
        char spec[64];

        snprintf(spec, sizeof(spec), "some %" PRIu64 " %" PRIu64, threshold, window);
        return psi_trigger_open(dirfd, name, spec);
}

int psi_trigger_new(sd_event *event, int dirfd, const char *name, uint64_t cgroup_id, PsiResource resource,
                    uint32_t threshold_ppm, uint64_t window_usec, PsiTriggerHandler handler,
                    void *userdata, PsiTrigger **ret, bool *ret_fell_back) {
        PsiTrigger *t;
        uint64_t window = MIN(MAX(window_usec, PSI_WINDOW_MIN_USEC), PSI_WINDOW_MAX_USEC);
        int fd, r;

        *ret_fell_back = false;
        fd = arm(dirfd, name, psi_threshold_usec(threshold_ppm, window), window);
        if (fd == -EINVAL && window % PSI_WINDOW_UNPRIVILEGED_USEC != 0) {
                window = (window / PSI_WINDOW_UNPRIVILEGED_USEC + 1) * PSI_WINDOW_UNPRIVILEGED_USEC;
                window = MIN(window, PSI_WINDOW_MAX_USEC - PSI_WINDOW_MAX_USEC % PSI_WINDOW_UNPRIVILEGED_USEC);
                fd = arm(dirfd, name, psi_threshold_usec(threshold_ppm, window), window);
                *ret_fell_back = fd >= 0;
        }
        if (fd < 0)
                return fd;

        t = calloc(1, sizeof(PsiTrigger));
        if (!t) {
                close(fd);
                return -ENOMEM;
        }
        *t = (PsiTrigger) {
                .cgroup_id = cgroup_id, .resource = resource, .fd = fd, .window_usec = window,
                .threshold_usec = psi_threshold_usec(threshold_ppm, window),
                .handler = handler, .userdata = userdata,
        };
        r = sd_event_add_io(event, &t->source, fd, EPOLLPRI, on_trigger, t);
        if (r >= 0)
                r = sd_event_source_set_priority(t->source, PSI_TRIGGER_PRIORITY);
        if (r < 0) {
                psi_trigger_free(t);
                return r;
        }
        (void) sd_event_source_set_description(t->source, "psi-trigger");
        *ret = t;
        return 0;
}

PsiTrigger *psi_trigger_new_failed(uint64_t cgroup_id, PsiResource resource, uint64_t threshold_usec,
                                   uint64_t window_usec) {
        PsiTrigger *t = calloc(1, sizeof(PsiTrigger));

        if (t)
                *t = (PsiTrigger) { .cgroup_id = cgroup_id, .resource = resource, .fd = -1,
                                    .threshold_usec = threshold_usec, .window_usec = window_usec };
        return t;
}

PsiTrigger *psi_trigger_free(PsiTrigger *t) {
        if (!t)
                return NULL;
        sd_event_source_disable_unref(t->source);
        closep(&t->fd);
        free(t);
        return NULL;
}
