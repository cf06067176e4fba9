/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket's bounds and who may change things, as pure functions:
 * admission of a new connection (a global cap, a reserve for root, a cap per
 * user), a token bucket for each connection's request rate, the memory held
 * for clients, and the check of a peer's credentials against AdminGroup=.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Connections open at once; root gets a few more so that it can always get in. */
#define BUS_CONNECTIONS_MAX 64
#define BUS_CONNECTIONS_ROOT_RESERVE 8
/* Connections of one unprivileged user. */
#define BUS_CONNECTIONS_PER_UID_MAX 16
/* Largest message a client may send (the daemon's replies are not bounded by it). */
#define BUS_MESSAGE_MAX (64 * 1024)
/* Requests per second and burst, per connection; past them the connection is read more slowly. */
#define BUS_RATE_PER_SEC 50
#define BUS_RATE_BURST 100
/* Back-pressure: a client's next request goes to sd-bus only when sd-bus has
 * taken the one before, holds none of its replies, and at most
 * BUS_HELD_PAUSE bytes of replies wait for the client. So a client that does
 * not read holds at most that, one reply, and the signals it subscribed to. */
#define BUS_HELD_PAUSE (64 * 1024)
/* A subscriber with more than this unread, or sd-bus holding more than
 * BUS_QUEUED_MAX messages for it, is dropped at the next signal. */
#define BUS_HELD_MAX (4 * 1024 * 1024)
#define BUS_QUEUED_MAX 256
/* Replies waiting for all clients together; past it, the client holding most is dropped. */
#define BUS_HELD_TOTAL_MAX (32 * 1024 * 1024)

typedef enum BusAdmission {
        BUS_ADMIT,
        BUS_REFUSE_FULL,        /* too many connections */
        BUS_REFUSE_USER,        /* too many connections of this user */
} BusAdmission;

BusAdmission bus_admission(size_t n_open, size_t n_open_of_uid, uid_t uid);

/* Whole tokens are requests; the bucket keeps fractions in millionths. */
typedef struct TokenBucket {
        uint64_t rate_per_sec;
        uint64_t burst;
        uint64_t micro;                 /* tokens * 1e6 */
        uint64_t last_usec;
} TokenBucket;

void token_bucket_init(TokenBucket *b, uint64_t rate_per_sec, uint64_t burst, uint64_t now_usec);
/* Refills for the time passed and returns the whole tokens available. */
uint64_t token_bucket_available(TokenBucket *b, uint64_t now_usec);
/* Takes n tokens (no more than available). */
void token_bucket_take(TokenBucket *b, uint64_t n);
/* Microseconds from now until one whole token is available (0: now). */
uint64_t token_bucket_wait_usec(const TokenBucket *b);

typedef struct PeerCreds {
        pid_t pid;
        uid_t uid;              /* effective, at connect() */
        gid_t gid;
        gid_t *groups;          /* supplementary groups at connect() */
        size_t n_groups;
} PeerCreds;

void peer_creds_clear(PeerCreds *c);

/*
 * Whether the peer may change things: uid 0, or AdminGroup= (admin_gid,
 * when have_admin_gid) as its primary or a supplementary group.
 */
bool peer_creds_is_admin(const PeerCreds *c, bool have_admin_gid, gid_t admin_gid);
