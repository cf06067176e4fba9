/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket as a transport: a listening AF_UNIX socket on the event
 * loop and one peer-to-peer sd-bus server connection per client (no broker;
 * busctl --address=unix:path=... works). Every byte passes through the
 * daemon: a client's requests are checked by bus-stream.h (framing, size),
 * paced by bus-limits.h and handed to sd-bus one message at a time through a
 * socketpair, the next only once sd-bus has taken the last and the client
 * reads its replies; sd-bus's replies come back through the same socketpair
 * and wait, counted, until the client reads them. Because sd-bus's peer is
 * the daemon, the client's identity is taken from its own socket
 * (SO_PEERCRED, SO_PEERGROUPS) when it connects. The transport knows nothing
 * of the API: a callback registers it on each new connection, and broadcasts
 * go through a send callback.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-limits.h"
#include "bus-stream.h"
#include "log.h"

#define CONTROL_SOCKET_DEFAULT "/run/mdreclaim/control"

/* Bytes read from a client at a time (also the most held for it). */
#define BUS_RELAY_BUFFER 16384
/* How long accepting pauses when the daemon is out of fds (a connection ending resumes it sooner). */
#define BUS_ACCEPT_RETRY_USEC (250 * USEC_PER_MSEC)
/* Fds kept open for the moment there are none: one connection (client, socketpair) and a refusal. */
#define BUS_FD_RESERVE 4
/* Replies are kept in pieces of this size (the unit in which memory held for clients is counted). */
#define BUS_REPLY_CHUNK 65536

typedef struct Transport Transport;

typedef struct ReplyChunk {
        struct ReplyChunk *next;
        size_t head, tail;              /* data[head..tail) waits for the client */
        uint8_t data[BUS_REPLY_CHUNK];
} ReplyChunk;

/* What sd-bus wrote for a client that the client has not read yet. */
typedef struct ReplyQueue {
        ReplyChunk *first, *last;
        size_t held;                    /* bytes allocated for it */
} ReplyQueue;

typedef struct BusConnection {
        Transport *transport;
        uint64_t id;
        int client_fd;
        int relay_fd;                   /* our end of the socketpair; sd-bus has the other */
        sd_bus *bus;
        sd_event_source *client_source; /* client_fd: requests readable, room for replies */
        sd_event_source *relay_source;  /* relay_fd: replies readable, room for requests */
        sd_event_source *resume_source; /* the rate limit lets the next request go */
        sd_event_source *sdbus_source;  /* after sd-bus ran: has it taken what it was given? */
        BusStream stream;
        TokenBucket bucket;
        uint8_t buf[BUS_RELAY_BUFFER];
        size_t len, checked, written;   /* buf[0..written) went on, [written..checked) may go */
        ReplyQueue replies;
        PeerCreds creds;
        bool eof;                       /* the client sends no more */
        bool subscribed;                /* takes broadcasts */
        bool dead;
        char description[64];
} BusConnection;

/* Registers the API's objects on a new connection's bus (c->bus; the connection is their userdata). */
typedef int (*TransportAttach)(BusConnection *c, void *userdata);
/* Sends one broadcast on a subscribed connection's bus. */
typedef int (*TransportSend)(sd_bus *bus, const void *data);

struct Transport {
        sd_event *event;
        TransportAttach attach;
        void *userdata;
        char *path;
        int listen_fd;
        sd_event_source *listen_source;
        sd_event_source *accept_retry_source; /* accepting paused while out of fds */
        sd_event_source *reap_source;   /* frees connections that ended, outside their callbacks */
        BusConnection **connections;
        size_t n_connections;
        uint64_t next_id;
        size_t held;                    /* memory held for all clients' replies */
        int reserve[BUS_FD_RESERVE];    /* /dev/null, or -1 while given up */
        RateLimit refused_log;
};

/*
 * Binds `path` (removing a stale socket; refusing if another daemon answers
 * on it), listens, and serves connections on `event`, calling `attach` for
 * each new one with `userdata`.
 */
int transport_new(sd_event *event, const char *path, TransportAttach attach, void *userdata, Transport **ret);
Transport *transport_free(Transport *s);

/* Connections open (not ended). */
size_t transport_connections(const Transport *s);

/* Calls `send` for every live subscribed connection; one that does not read its signals is dropped. */
void transport_broadcast(Transport *s, TransportSend send, const void *data);

/* Ends a connection (now or after its callback returns); `why` is logged at debug level. */
void bus_connection_kill(BusConnection *c, const char *why);
