/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "protection.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "blkqueue.h"
#include "name-escape.h"
#include "util.h"

static const char *name_of(const CgEntry *e) {
        return e->unit ? e->unit : e->cg->path;
}

static void count_protected(Manager *m, ProtectionSummary *s) {
        const CgEntry *e;

        /* A policy that is not off makes its cgroups hot: only those are looked at. */
        for (size_t i = 0; (e = observer_next_hot(m->observer, &i));) {
                if (!e->policy || !e->policy->protect || e->policy->mode == POLICY_MODE_OFF)
                        continue;
                if (s->n_protected < PROTECTION_NAMES_MAX)
                        s->protected[s->n_protected] = name_of(e);
                s->n_protected++;
        }
}

static void add_device(ProtectionSummary *s, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < s->n_devices; i++)
                if (s->devices[i].major == major && s->devices[i].minor == minor)
                        return;
        if (s->n_devices < PROTECTION_DEVICES_MAX) {
                s->devices[s->n_devices].major = major;
                s->devices[s->n_devices].minor = minor;
                s->n_devices++;
        }
}

static bool write_cap(const ThrottleEntry *t) {
        return t->kind == THROTTLE_IO_WBPS && t->requested[POINT_WRITE] != THROTTLE_NONE;
}

/* The write point's caps in the ledger: each writer once, however many devices it is capped on. */
static void count_capped(Manager *m, const Ledger *l, ProtectionSummary *s) {
        for (size_t i = 0; i < l->n; i++) {
                const ThrottleEntry *t = &l->entries[i];
                const CgEntry *e;
                bool seen = false;

                if (!write_cap(t))
                        continue;
                add_device(s, t->major, t->minor);
                for (size_t j = 0; j < i && !seen; j++)
                        seen = write_cap(&l->entries[j]) && l->entries[j].cgroup_id == t->cgroup_id;
                if (seen)
                        continue;
                e = cgtable_find(&m->observer->cgroups, t->cgroup_id);
                if (s->n_capped < PROTECTION_NAMES_MAX)
                        s->capped[s->n_capped] = e && !e->gone ? name_of(e) : t->path;
                s->n_capped++;
        }
}

void protection_summary(Manager *m, ProtectionSummary *ret) {
        const Ledger *l = actuator_ledger(m->actuator);

        *ret = (ProtectionSummary) {};
        count_protected(m, ret);
        count_capped(m, l, ret);
        ret->n_throttles = l->n + (m->queues ? queue_depth_ledger(m->queues)->n : 0);
}

/* "a, b and 3 more": the names kept of n, escaped. */
static void put_names(FILE *f, const char *const *names, size_t n) {
        size_t shown = MIN(n, (size_t) PROTECTION_NAMES_MAX);

        for (size_t i = 0; i < shown; i++) {
                fputs(i == 0 ? "" : i + 1 == n ? " and " : ", ", f);
                name_fputs(names[i], f);
        }
        if (n > shown)
                fprintf(f, " and %zu more", n - shown);
}

static void put_devices(Manager *m, FILE *f, const ProtectionSummary *s) {
        for (size_t i = 0; i < s->n_devices; i++) {
                char name[64];

                blkdev_name(m->observer->host->sys_fd, s->devices[i].major, s->devices[i].minor, name, sizeof(name));
                fprintf(f, "%s%s", i ? ", " : "", name);
        }
}

char *protection_line(Manager *m, const ProtectionSummary *s) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        if (!f)
                return NULL;
        if (s->n_protected == 0)
                fputs("nothing protected (no policy with Protect=yes governs a cgroup)", f);
        else {
                fputs("protecting ", f);
                put_names(f, s->protected, s->n_protected);
                if (s->n_capped == 0)
                        fputs("; no writer capped", f);
                else {
                        fprintf(f, "; %zu writer%s capped on ", s->n_capped, s->n_capped == 1 ? "" : "s");
                        put_devices(m, f, s);
                        fputs(" (", f);
                        put_names(f, s->capped, s->n_capped);
                        fputc(')', f);
                }
        }
        if (s->n_throttles > 0)
                fprintf(f, "; %zu throttle%s held", s->n_throttles, s->n_throttles == 1 ? "" : "s");
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}
