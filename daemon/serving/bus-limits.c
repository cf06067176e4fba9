/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "bus-limits.h"

#include <stdlib.h>

#include "util.h"

BusAdmission bus_admission(size_t n_open, size_t n_open_of_uid, uid_t uid) {
        if (uid == 0)
                return n_open < BUS_CONNECTIONS_MAX + BUS_CONNECTIONS_ROOT_RESERVE ? BUS_ADMIT : BUS_REFUSE_FULL;
        if (n_open >= BUS_CONNECTIONS_MAX)
                return BUS_REFUSE_FULL;
        if (n_open_of_uid >= BUS_CONNECTIONS_PER_UID_MAX)
                return BUS_REFUSE_USER;
        return BUS_ADMIT;
}

void token_bucket_init(TokenBucket *b, uint64_t rate_per_sec, uint64_t burst, uint64_t now_usec) {
        *b = (TokenBucket) {
                .rate_per_sec = rate_per_sec,
                .burst = burst,
                .micro = burst * USEC_PER_SEC,
                .last_usec = now_usec,
        };
}

uint64_t token_bucket_available(TokenBucket *b, uint64_t now_usec) {
        uint64_t cap = b->burst * USEC_PER_SEC;

        if (now_usec > b->last_usec) {
                uint64_t elapsed = now_usec - b->last_usec;
                /* Saturate instead of overflowing after a long idle time. */
                uint64_t add = elapsed > cap ? cap : elapsed * b->rate_per_sec;

                b->micro = add > cap - MIN(b->micro, cap) ? cap : b->micro + add;
                b->last_usec = now_usec;
        }
        return b->micro / USEC_PER_SEC;
}

void token_bucket_take(TokenBucket *b, uint64_t n) {
        uint64_t m = n * USEC_PER_SEC;

        b->micro = m > b->micro ? 0 : b->micro - m;
}

uint64_t token_bucket_wait_usec(const TokenBucket *b) {
        uint64_t missing;

        if (b->micro >= USEC_PER_SEC)
                return 0;
        if (b->rate_per_sec == 0)
                return UINT64_MAX;
        missing = USEC_PER_SEC - b->micro;
        return (missing + b->rate_per_sec - 1) / b->rate_per_sec;
}

void peer_creds_clear(PeerCreds *c) {
        free(c->groups);
        *c = (PeerCreds) { .pid = 0, .uid = (uid_t) -1, .gid = (gid_t) -1 };
}

bool peer_creds_is_admin(const PeerCreds *c, bool have_admin_gid, gid_t admin_gid) {
        if (c->uid == 0)
                return true;
        if (!have_admin_gid)
                return false;
        if (c->gid == admin_gid)
                return true;
        for (size_t i = 0; i < c->n_groups; i++)
                if (c->groups[i] == admin_gid)
                        return true;
        return false;
}
