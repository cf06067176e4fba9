/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The history of `mdctl events` from the journal: the events one daemon
 * lineage (those serving one control socket) logged, read back with
 * sd-journal, in the shape the daemon's ListEventsWithFields gives them, so
 * that one code prints both. Needs read access to the journal (root, or the
 * groups adm and systemd-journal); without it, nothing is read and that is
 * said once.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-id128.h>

#include "bus-value.h"

/* Who logged an event: the daemon's pid and the boot it ran in (the journal's trusted fields). */
typedef struct EventOrigin {
        uint64_t pid;
        sd_id128_t boot;
} EventOrigin;

typedef struct JournalQuery {
        const char *directory;          /* NULL: the system journal */
        const char *socket;             /* the events of the daemons that served this control socket */
        uint64_t since_usec;            /* CLOCK_REALTIME; 0: from the oldest */
        size_t max;                     /* the newest this many that `keep` keeps */
        /* An event (ListEventsWithFields' shape) and who logged it: whether to keep it. */
        bool (*keep)(const Value *event, const EventOrigin *origin, void *userdata);
        void *userdata;
} JournalQuery;

/*
 * The events the query keeps, oldest first, into *ret (an array); *ret_more: older ones were left
 * out for `max`. 0 (an empty array when the journal is not readable, said on stderr), or a
 * negative errno after saying why.
 */
int journal_events(const JournalQuery *q, Value *ret, bool *ret_more);
