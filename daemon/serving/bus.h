/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket: a listening AF_UNIX socket on the event loop and one
 * peer-to-peer sd-bus server connection per client (no broker; busctl
 * --address=unix:path=... works). A client's bytes pass through the daemon
 * before sd-bus sees them: bus-stream.h checks their framing and size,
 * bus-limits.h paces them, and only whole, bounded messages reach sd-bus
 * through a socketpair; replies and signals go straight to the client.
 * Because sd-bus reads the socketpair, the peer's identity is taken from the
 * client's own socket (SO_PEERCRED, SO_PEERGROUPS) when it connects.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "bus-limits.h"
#include "bus-stream.h"
#include "log.h"
#include "manager.h"

#define CONTROL_SOCKET_DEFAULT "/run/mdreclaim/control"
#define BUS_OBJECT_PATH "/org/mdreclaim/Manager"
#define BUS_INTERFACE "org.mdreclaim.Manager1"

/* Bytes read from a client at a time (also the most held for it). */
#define BUS_RELAY_BUFFER 16384

typedef struct BusServer BusServer;
typedef struct PolicyWriter PolicyWriter;

typedef struct BusConnection {
        BusServer *server;
        uint64_t id;
        int client_fd;                  /* requests are read from here */
        int relay_fd;                   /* ... and written here; sd-bus reads the other end */
        sd_bus *bus;                    /* writes replies to a dup of client_fd */
        sd_event_source *client_source; /* client_fd readable */
        sd_event_source *relay_source;  /* relay_fd writable */
        sd_event_source *resume_source; /* the rate limit or a full reply queue lets it go on */
        BusStream stream;
        TokenBucket bucket;
        uint8_t buf[BUS_RELAY_BUFFER];
        size_t len, checked, written;   /* buf[0..written) went on, [written..checked) may go */
        PeerCreds creds;
        bool subscribed;
        bool dead;
        char description[64];
} BusConnection;

/* A caller waiting for an event (writeback --wait): answered when it comes, or at its deadline. */
typedef struct BusWaiter {
        sd_bus_message *msg;
        char *action;
        char *cgroup;
        uint64_t deadline_usec;         /* CLOCK_MONOTONIC */
} BusWaiter;

#define BUS_WAITERS_MAX 16

struct BusServer {
        Manager *manager;
        char *path;
        int listen_fd;
        sd_event_source *listen_source;
        sd_event_source *reap_source;   /* frees connections that ended, outside their callbacks */
        BusConnection **connections;
        size_t n_connections;
        uint64_t next_id;
        uint64_t started_realtime_usec;
        RateLimit refused_log;
        PolicyWriter *writer;
        BusWaiter waiters[BUS_WAITERS_MAX];
        size_t n_waiters;
        sd_event_source *wait_source;   /* answers waiters whose deadline passed */
        /* AdminGroup= as last resolved */
        char *admin_group;
        bool have_admin_gid;
        gid_t admin_gid;
        uint64_t admin_group_checked_usec;
};

/*
 * Binds `path` (removing a stale socket; refusing if another daemon answers
 * on it), listens, and serves the API on the manager's loop. Hooks the
 * manager's events to the Event signal.
 */
int bus_server_new(Manager *m, const char *path, BusServer **ret);
BusServer *bus_server_free(BusServer *s);
static inline void bus_server_freep(BusServer **s) {
        if (*s)
                bus_server_free(*s);
}

/* Connections open (not ended). */
size_t bus_server_connections(const BusServer *s);

/* Ends a connection (now or after its callback returns); `why` is logged at debug level. */
void bus_connection_kill(BusConnection *c, const char *why);
