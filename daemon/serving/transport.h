/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket as a transport: a listening AF_UNIX socket on the event
 * loop, and one peer-to-peer sd-bus server connection per client (no broker;
 * busctl --address=unix:path=... works), each relayed through the daemon
 * byte by byte (bus-connection.h). This side accepts: it admits a client by
 * the connections open (bus-limits.h), keeps fds in reserve so that a client
 * is refused with a reason rather than left waiting when the daemon is out
 * of them, frees the connections that ended and sends broadcasts. Because
 * sd-bus's peer is the daemon, the client's identity is taken from its own
 * socket (SO_PEERCRED, SO_PEERGROUPS) when it connects. The transport knows
 * nothing of the API: a callback registers it on each new connection, and
 * broadcasts go through a send callback.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-connection.h"
#include "log.h"

#define CONTROL_SOCKET_DEFAULT "/run/mdreclaim/control"

/* How long accepting pauses when the daemon is out of fds (a connection ending resumes it sooner). */
#define BUS_ACCEPT_RETRY_USEC (250 * USEC_PER_MSEC)
/* Fds kept open for the moment there are none: one connection (client, socketpair) and a refusal. */
#define BUS_FD_RESERVE 4

typedef struct Transport Transport;

/* Sends one broadcast on a subscribed connection's bus. */
typedef int (*TransportSend)(sd_bus *bus, const void *data);

struct Transport {
        ConnectionSet set;              /* the connections, and what they share */
        char *path;
        int listen_fd;
        sd_event_source *listen_source;
        sd_event_source *accept_retry_source; /* accepting paused while out of fds */
        int reserve[BUS_FD_RESERVE];    /* /dev/null, or -1 while given up */
};

/*
 * Binds `path` (removing a stale socket; refusing if another daemon answers
 * on it), listens, and serves connections on `event`, calling `attach` for
 * each new one with `userdata`.
 */
int transport_new(sd_event *event, const char *path, ConnectionAttach attach, void *userdata, Transport **ret);
Transport *transport_free(Transport *s);

/* Connections open (not ended). */
size_t transport_connections(const Transport *s);

/* Calls `send` for every live subscribed connection; one that does not read its signals is dropped. */
void transport_broadcast(Transport *s, TransportSend send, const void *data);
