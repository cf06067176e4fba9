/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "bus-connection.h"

#include <errno.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Send buffers (the kernel doubles them) of a client's socket and of sd-bus's end of the
 * socketpair: what the kernel holds for a client besides the replies counted here. */
#define BUS_SOCKET_SNDBUF (128 * 1024)

BusConnection *bus_connection_free(BusConnection *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->client_source);
        sd_event_source_disable_unref(c->relay_source);
        sd_event_source_disable_unref(c->resume_source);
        sd_event_source_disable_unref(c->sdbus_source);
        if (c->bus)
                sd_bus_close_unref(c->bus);
        reply_queue_clear(&c->replies, &c->set->held);
        closep(&c->client_fd);
        closep(&c->relay_fd);
        peer_creds_clear(&c->creds);
        free(c);
        return NULL;
}

static void connection_log_limit(BusConnection *c, const char *why) {
        unsigned suppressed = 0;

        if (!ratelimit_below(&c->set->refused_log, now_usec(CLOCK_MONOTONIC), &suppressed))
                return;
        log_warning("Control connection %s dropped: %s%s", c->description, why,
                    suppressed ? " (similar messages were suppressed)" : "");
}

void bus_connection_kill(BusConnection *c, const char *why) {
        if (c->dead)
                return;
        log_debug("Control connection %s ends: %s", c->description, why);
        c->dead = true;
        c->subscribed = false;
        /* Its replies are given back now, not when it is freed: the bound on all clients counts them no more. */
        reply_queue_clear(&c->replies, &c->set->held);
        (void) sd_event_source_set_enabled(c->client_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->relay_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->resume_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->sdbus_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->set->reap_source, SD_EVENT_ONESHOT);
}

void bus_connection_drop(BusConnection *c, const char *warning, const char *why) {
        connection_log_limit(c, warning);
        bus_connection_kill(c, why);
}

/* All clients together hold more than BUS_HELD_TOTAL_MAX: the one holding most is dropped. */
static void connection_set_check_held(ConnectionSet *s) {
        while (s->held > BUS_HELD_TOTAL_MAX) {
                BusConnection *g = NULL;
                char why[160];

                for (size_t i = 0; i < s->n_connections; i++)
                        if (!s->connections[i]->dead && (!g || s->connections[i]->replies.held > g->replies.held))
                                g = s->connections[i];
                if (!g)
                        return;
                snprintf(why, sizeof(why),
                         "it held %zu KiB of replies unread, the most while all clients held over %u MiB",
                         g->replies.held / 1024, (unsigned) (BUS_HELD_TOTAL_MAX >> 20));
                bus_connection_drop(g, why, "memory held for clients over the limit");
        }
}

/* What passing a client's requests on waits for. */
typedef enum Wait {
        WAIT_GO,                /* nothing: go on */
        WAIT_CLIENT,            /* the client's next bytes */
        WAIT_RELAY,             /* room in the socketpair */
        WAIT_SDBUS,             /* sd-bus: to authenticate, take a request whole, pass its replies on */
        WAIT_READER,            /* the client to read its replies */
        WAIT_TIMER,             /* the rate limit */
        WAIT_END,               /* the connection ended */
} Wait;

/* Arms the sources for `w`; replies are passed on whenever there are some, whatever the requests wait for. */
static void connection_arm(BusConnection *c, Wait w) {
        uint32_t client = (w == WAIT_CLIENT ? EPOLLIN : 0) | (c->replies.first ? EPOLLOUT : 0);

        if (client)
                (void) sd_event_source_set_io_events(c->client_source, client);
        (void) sd_event_source_set_enabled(c->client_source, client ? SD_EVENT_ON : SD_EVENT_OFF);
        (void) sd_event_source_set_io_events(c->relay_source, EPOLLIN | (w == WAIT_RELAY ? EPOLLOUT : 0));
        (void) sd_event_source_set_enabled(c->sdbus_source, w == WAIT_SDBUS ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
        if (w == WAIT_TIMER)
                (void) sd_event_source_set_time(c->resume_source, now_usec(CLOCK_MONOTONIC) +
                                                MAX(token_bucket_wait_usec(&c->bucket), (uint64_t) 1000));
        (void) sd_event_source_set_enabled(c->resume_source, w == WAIT_TIMER ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
}

static const char *stream_error(int r) {
        switch (r) {
        case -EMSGSIZE:
                return "it sent a message larger than the limit of the control API";
        case -EBADMSG:
                return "it sent something that is not a D-Bus message";
        default:
                return "its authentication phase was malformed or too long";
        }
}

/* Whether sd-bus is still at what it was given: authenticating, a request not yet taken whole,
 * or replies it could not pass on yet. Asked outside sd-bus's own callbacks, so a request taken
 * whole has been dispatched (or dropped as invalid). */
static bool connection_sdbus_busy(BusConnection *c) {
        uint64_t queued = 0;
        int unread = 0;

        if (sd_bus_is_ready(c->bus) <= 0)
                return true;
        if (ioctl(c->relay_fd, SIOCOUTQ, &unread) < 0 || unread > 0)
                return true;
        if (sd_bus_get_n_queued_read(c->bus, &queued) < 0 || queued > 0)
                return true;
        return sd_bus_get_n_queued_write(c->bus, &queued) < 0 || queued > 0;
}

/* Between two requests: whether the next may go to sd-bus now. */
static Wait connection_gate(BusConnection *c) {
        if (connection_sdbus_busy(c))
                return WAIT_SDBUS;
        if (c->replies.held > BUS_HELD_PAUSE)
                return WAIT_READER;
        if (token_bucket_available(&c->bucket, now_usec(CLOCK_MONOTONIC)) == 0)
                return WAIT_TIMER;
        return WAIT_GO;
}

/* Checks the next bytes read: the authentication phase up to BEGIN (what follows it waits for
 * sd-bus to finish authenticating: sd-bus 252 would not dispatch it), or one request. */
static Wait connection_check(BusConnection *c) {
        bool boundary = bus_stream_at_boundary(&c->stream);
        uint64_t budget = boundary;
        size_t n = 0;
        Wait w;
        int r;

        if (boundary) {
                w = connection_gate(c);
                if (w != WAIT_GO)
                        return w;
        }
        r = bus_stream_feed(&c->stream, c->buf + c->checked, c->len - c->checked, &budget, &n);
        if (r < 0) {
                bus_connection_drop(c, stream_error(r), "protocol or limit violation");
                return WAIT_END;
        }
        if (boundary)
                token_bucket_take(&c->bucket, 1);
        c->checked += n;
        return WAIT_GO;
}

/* What a read or write that returned `k` means: go on, wait for `again`, or the end (`why`). */
static Wait connection_io(BusConnection *c, ssize_t k, Wait again, const char *why) {
        if (k >= 0 || errno == EINTR)
                return WAIT_GO;
        if (errno == EAGAIN)
                return again;
        bus_connection_kill(c, why);
        return WAIT_END;
}

static Wait connection_relay(BusConnection *c) {
        ssize_t k = send(c->relay_fd, c->buf + c->written, c->checked - c->written, MSG_DONTWAIT | MSG_NOSIGNAL);

        if (k > 0)
                c->written += (size_t) k;
        return connection_io(c, k, WAIT_RELAY, "cannot pass data on to sd-bus");
}

/* Reads the client's next bytes, all before them having gone on. */
static Wait connection_read(BusConnection *c) {
        ssize_t k;

        c->len = c->checked = c->written = 0;
        k = read(c->client_fd, c->buf, sizeof(c->buf));
        if (k >= 0) {
                c->eof = k == 0;
                c->len = (size_t) k;
        }
        return connection_io(c, k, WAIT_CLIENT, "read error");
}

/* The client sends no more: the connection ends once sd-bus has answered what it was given and
 * the client has every reply (one that closed for good makes writing them fail sooner). */
static Wait connection_finish(BusConnection *c) {
        if (sd_bus_is_ready(c->bus) > 0 && connection_sdbus_busy(c))
                return WAIT_SDBUS;
        if (c->replies.first)
                return WAIT_READER;
        bus_connection_kill(c, "the client closed the connection");
        return WAIT_END;
}

/* Moves the client's requests on to sd-bus until something must be waited for. */
static Wait connection_pass_requests(BusConnection *c) {
        for (;;) {
                Wait w;

                if (c->written < c->checked)
                        w = connection_relay(c);
                else if (c->checked < c->len)
                        w = connection_check(c);
                else if (c->eof)
                        return connection_finish(c);
                else
                        w = connection_read(c);
                if (w != WAIT_GO)
                        return w;
        }
}

/* Takes what sd-bus wrote and gives the client what it will take. */
static int connection_pass_replies(BusConnection *c) {
        int r;

        r = reply_queue_fill(&c->replies, c->relay_fd, &c->set->held);
        if (r < 0) {
                bus_connection_kill(c, r == -ECONNRESET ? "sd-bus closed the connection"
                                                        : "cannot take sd-bus's replies");
                return r;
        }
        r = reply_queue_flush(&c->replies, c->client_fd, &c->set->held);
        if (r < 0) {
                bus_connection_kill(c, "cannot write to the client");
                return r;
        }
        return 0;
}

static void connection_pump(BusConnection *c) {
        Wait w;

        if (c->dead || connection_pass_replies(c) < 0)
                return;
        connection_set_check_held(c->set);
        if (c->dead)
                return;
        w = connection_pass_requests(c);
        if (w != WAIT_END)
                connection_arm(c, w);
}

static int on_client(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        connection_pump(userdata);
        return 0;
}

static int on_relay(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        connection_pump(userdata);
        return 0;
}

static int on_resume(sd_event_source *src, uint64_t usec, void *userdata) {
        connection_pump(userdata);
        return 0;
}

static int on_sdbus(sd_event_source *src, void *userdata) {
        connection_pump(userdata);
        return 0;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        bus_connection_kill(userdata, "sd-bus ended the connection");
        return 0;
}

static int connection_new_bus(BusConnection *c, int fd) {
        _cleanup_close_ int sdbus_fd = fd;
        sd_id128_t id;
        int r;

        r = sd_bus_new(&c->bus);
        if (r < 0)
                return r;
        r = sd_bus_set_fd(c->bus, sdbus_fd, sdbus_fd);
        if (r < 0)
                return r;
        TAKE_FD(sdbus_fd);
        (void) sd_bus_set_description(c->bus, c->description);
        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        /* Who the peer is comes from its socket (bus.h), so sd-bus may accept any SASL identity. */
        r = sd_bus_set_server(c->bus, 1, id);
        if (r < 0)
                return r;
        r = sd_bus_set_anonymous(c->bus, 1);
        if (r < 0)
                return r;
        r = sd_bus_negotiate_fds(c->bus, 0);
        if (r < 0)
                return r;
        /* sd-bus would flush each connection when the loop exits, blocking on a client that never
         * finished authenticating; connections are closed without waiting instead (bus_connection_free). */
        return sd_bus_set_close_on_exit(c->bus, 0);
}

static int connection_start_bus(BusConnection *c) {
        int r;

        r = sd_bus_add_match(c->bus, NULL, "type='signal',path='/org/freedesktop/DBus/Local',"
                             "interface='org.freedesktop.DBus.Local',member='Disconnected'",
                             on_disconnected, c);
        if (r < 0)
                return r;
        r = c->set->attach(c, c->set->userdata);
        if (r < 0)
                return r;
        r = sd_bus_start(c->bus);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(c->bus, c->set->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        /* sd-bus raised its send buffer to 8M; what it writes is taken into the counted queue instead. */
        (void) setsockopt(sd_bus_get_fd(c->bus), SOL_SOCKET, SO_SNDBUF, &(int) { BUS_SOCKET_SNDBUF }, sizeof(int));
        (void) setsockopt(c->client_fd, SOL_SOCKET, SO_SNDBUF, &(int) { BUS_SOCKET_SNDBUF }, sizeof(int));
        return 0;
}

static void connection_freep(BusConnection **c) {
        bus_connection_free(*c);
}

static int connection_add_sources(BusConnection *c) {
        sd_event *e = c->set->event;
        int r;

        r = sd_event_add_io(e, &c->client_source, c->client_fd, EPOLLIN, on_client, c);
        if (r < 0)
                return r;
        r = sd_event_add_io(e, &c->relay_source, c->relay_fd, EPOLLIN, on_relay, c);
        if (r < 0)
                return r;
        r = sd_event_add_time(e, &c->resume_source, CLOCK_MONOTONIC, 0, 0, on_resume, c);
        if (r < 0)
                return r;
        /* A post source runs after any other: after sd-bus's own, it looks whether sd-bus is done. */
        r = sd_event_add_post(e, &c->sdbus_source, on_sdbus, c);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(c->client_source, "control-client");
        (void) sd_event_source_set_description(c->relay_source, "control-relay");
        (void) sd_event_source_set_description(c->resume_source, "control-resume");
        (void) sd_event_source_set_description(c->sdbus_source, "control-sdbus");
        return 0;
}

int bus_connection_new(ConnectionSet *s, int fd, PeerCreds *creds, BusConnection **ret) {
        _cleanup_close_ int client = fd;
        _cleanup_(connection_freep) BusConnection *c = calloc(1, sizeof(BusConnection));
        int pair[2], r;

        if (!c)
                return -ENOMEM;
        c->set = s;
        c->id = ++s->next_id;
        c->client_fd = TAKE_FD(client);
        c->relay_fd = -1;
        c->creds = *creds;
        *creds = (PeerCreds) {};
        snprintf(c->description, sizeof(c->description), "#%llu (pid %d, uid %u)",
                 (unsigned long long) c->id, (int) c->creds.pid, (unsigned) c->creds.uid);
        bus_stream_init(&c->stream, BUS_MESSAGE_MAX);
        token_bucket_init(&c->bucket, BUS_RATE_PER_SEC, BUS_RATE_BURST, now_usec(CLOCK_MONOTONIC));
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0)
                return negative_errno();
        c->relay_fd = pair[0];
        r = connection_new_bus(c, pair[1]);
        if (r < 0)
                return r;
        r = connection_start_bus(c);
        if (r < 0)
                return r;
        r = connection_add_sources(c);
        if (r < 0)
                return r;
        connection_arm(c, WAIT_CLIENT);
        *ret = TAKE_PTR(c);
        return 0;
}
