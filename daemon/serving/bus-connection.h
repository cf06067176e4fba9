/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One client's connection to the control socket: the client's socket, a
 * socketpair whose other end is a peer-to-peer sd-bus server connection, and
 * the relay between them. A client's requests are checked by bus-stream.h
 * (framing, size) and paced by bus-limits.h, and go on to sd-bus one message
 * at a time, the next only once sd-bus has taken the last and the client
 * reads its replies; sd-bus's replies come back through the socketpair and
 * wait, counted (reply-queue.h), until the client reads them. The listening
 * side (transport.h) makes each connection and frees it once it has ended.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-limits.h"
#include "bus-stream.h"
#include "log.h"
#include "reply-queue.h"

/* Bytes read from a client at a time (also the most held for it). */
#define BUS_RELAY_BUFFER 16384

typedef struct ConnectionSet ConnectionSet;

typedef struct BusConnection {
        ConnectionSet *set;
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
typedef int (*ConnectionAttach)(BusConnection *c, void *userdata);

/* What every connection shares: the loop, the API's callback, and the bounds over all clients. */
struct ConnectionSet {
        sd_event *event;
        ConnectionAttach attach;
        void *userdata;                 /* attach's */
        sd_event_source *reap_source;   /* frees connections that ended, outside their callbacks */
        BusConnection **connections;
        size_t n_connections;
        uint64_t next_id;
        size_t held;                    /* memory held for all clients' replies */
        RateLimit refused_log;          /* the warnings of refused and dropped connections */
};

/*
 * A connection on the accepted `fd` (taken, whatever happens) of a peer with
 * `creds` (taken), its bus started with the API attached, waiting for the
 * client's first bytes. The caller adds it to `set`'s connections.
 */
int bus_connection_new(ConnectionSet *set, int fd, PeerCreds *creds, BusConnection **ret);
BusConnection *bus_connection_free(BusConnection *c);

/* Ends a connection (now or after its callback returns); `why` is logged at debug level. */
void bus_connection_kill(BusConnection *c, const char *why);

/* Ends a connection that broke a limit: `warning` is logged as a warning (rate-limited), `why` as
 * bus_connection_kill() logs it. */
void bus_connection_drop(BusConnection *c, const char *warning, const char *why);
