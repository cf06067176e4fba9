/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Send buffers (the kernel doubles them) of a client's socket and of sd-bus's end of the
 * socketpair: what the kernel holds for a client besides the replies counted here. */
#define BUS_SOCKET_SNDBUF (128 * 1024)

static void accept_resume(Transport *s);
static bool reserve_take(Transport *s);

/* ---- replies waiting for a client ---- */

static void reply_queue_clear(ReplyQueue *q, size_t *total) {
        while (q->first) {
                ReplyChunk *c = q->first;

                q->first = c->next;
                free(c);
        }
        q->last = NULL;
        *total -= q->held;
        q->held = 0;
}

/* Whether `fd` has something to read: 1 (bytes or the end), 0 (not yet), or a negative errno. */
static int readable(int fd) {
        uint8_t b;

        if (recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0)
                return 1;
        return errno == EAGAIN || errno == EINTR ? 0 : negative_errno();
}

/* The last chunk if it has room, else a new one (only when there is something to put in it). */
static int reply_queue_room(ReplyQueue *q, int fd, size_t *total, ReplyChunk **ret) {
        ReplyChunk *c = q->last;
        int r;

        if (c && c->tail < sizeof(c->data)) {
                *ret = c;
                return 1;
        }
        r = readable(fd);
        if (r <= 0)
                return r;
        c = malloc(sizeof(ReplyChunk));
        if (!c)
                return -ENOMEM;
        c->next = NULL;
        c->head = c->tail = 0;
        *(q->last ? &q->last->next : &q->first) = c;
        q->last = c;
        q->held += sizeof(ReplyChunk);
        *total += sizeof(ReplyChunk);
        *ret = c;
        return 1;
}

/* Takes all that waits on `fd`. Returns 0, or a negative errno (-ECONNRESET: the other end closed). */
static int reply_queue_fill(ReplyQueue *q, int fd, size_t *total) {
        for (;;) {
                ReplyChunk *c;
                ssize_t k;
                int r;

                r = reply_queue_room(q, fd, total, &c);
                if (r <= 0)
                        return r;
                k = read(fd, c->data + c->tail, sizeof(c->data) - c->tail);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno == EAGAIN ? 0 : negative_errno();
                if (k == 0)
                        return -ECONNRESET;
                c->tail += (size_t) k;
        }
}

/* Writes what waits to `fd` until it would block. Returns 0 or a negative errno. */
static int reply_queue_flush(ReplyQueue *q, int fd, size_t *total) {
        while (q->first) {
                ReplyChunk *c = q->first;
                ssize_t k;

                if (c->head < c->tail) {
                        k = send(fd, c->data + c->head, c->tail - c->head, MSG_DONTWAIT | MSG_NOSIGNAL);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return errno == EAGAIN ? 0 : negative_errno();
                        c->head += (size_t) k;
                        continue;
                }
                q->first = c->next;
                if (!q->first)
                        q->last = NULL;
                free(c);
                q->held -= sizeof(ReplyChunk);
                *total -= sizeof(ReplyChunk);
        }
        return 0;
}

/* ---- connections ---- */

static BusConnection *connection_free(BusConnection *c) {
        if (!c)
                return NULL;
        sd_event_source_disable_unref(c->client_source);
        sd_event_source_disable_unref(c->relay_source);
        sd_event_source_disable_unref(c->resume_source);
        sd_event_source_disable_unref(c->sdbus_source);
        if (c->bus)
                sd_bus_close_unref(c->bus);
        reply_queue_clear(&c->replies, &c->transport->held);
        closep(&c->client_fd);
        closep(&c->relay_fd);
        peer_creds_clear(&c->creds);
        free(c);
        return NULL;
}

static int on_reap(sd_event_source *src, void *userdata) {
        Transport *s = userdata;
        size_t j = 0;

        for (size_t i = 0; i < s->n_connections; i++) {
                if (s->connections[i]->dead)
                        connection_free(s->connections[i]);
                else
                        s->connections[j++] = s->connections[i];
        }
        s->n_connections = j;
        /* A connection that ended freed its fds: the reserve first, then accepting if it was paused. */
        (void) reserve_take(s);
        if (sd_event_source_get_enabled(s->accept_retry_source, NULL) > 0)
                accept_resume(s);
        return 0;
}

static void connection_log_limit(BusConnection *c, const char *why) {
        unsigned suppressed = 0;

        if (!ratelimit_below(&c->transport->refused_log, now_usec(CLOCK_MONOTONIC), &suppressed))
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
        reply_queue_clear(&c->replies, &c->transport->held);
        (void) sd_event_source_set_enabled(c->client_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->relay_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->resume_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->sdbus_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(c->transport->reap_source, SD_EVENT_ONESHOT);
}

/* All clients together hold more than BUS_HELD_TOTAL_MAX: the one holding most is dropped. */
static void transport_check_held(Transport *s) {
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
                connection_log_limit(g, why);
                bus_connection_kill(g, "memory held for clients over the limit");
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
                connection_log_limit(c, stream_error(r));
                bus_connection_kill(c, "protocol or limit violation");
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

        r = reply_queue_fill(&c->replies, c->relay_fd, &c->transport->held);
        if (r < 0) {
                bus_connection_kill(c, r == -ECONNRESET ? "sd-bus closed the connection"
                                                        : "cannot take sd-bus's replies");
                return r;
        }
        r = reply_queue_flush(&c->replies, c->client_fd, &c->transport->held);
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
        transport_check_held(c->transport);
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

static int read_creds(int fd, PeerCreds *ret) {
        struct ucred uc;
        socklen_t len = sizeof(uc);
        gid_t *groups = NULL;
        int n = 16;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
                return negative_errno();
        for (;;) {
                gid_t *g = realloc(groups, (size_t) n * sizeof(gid_t));
                if (!g) {
                        free(groups);
                        return -ENOMEM;
                }
                groups = g;
                len = (socklen_t) ((size_t) n * sizeof(gid_t));
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) >= 0)
                        break;
                if (errno != ERANGE || n >= 65536) {
                        /* Without the list only uid 0 and the primary group count. */
                        len = 0;
                        break;
                }
                n = (int) (len / sizeof(gid_t)) + 1;
        }
        *ret = (PeerCreds) { .pid = uc.pid, .uid = uc.uid, .gid = uc.gid, .groups = groups,
                             .n_groups = len / sizeof(gid_t) };
        return 0;
}

/* A server bus on sd-bus's end `fd` of the socketpair (taken, whatever happens). */
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
         * finished authenticating; connections are closed without waiting instead (bus_server_free). */
        return sd_bus_set_close_on_exit(c->bus, 0);
}

static int connection_start_bus(BusConnection *c) {
        int r;

        r = sd_bus_add_match(c->bus, NULL, "type='signal',path='/org/freedesktop/DBus/Local',"
                             "interface='org.freedesktop.DBus.Local',member='Disconnected'",
                             on_disconnected, c);
        if (r < 0)
                return r;
        r = c->transport->attach(c, c->transport->userdata);
        if (r < 0)
                return r;
        r = sd_bus_start(c->bus);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(c->bus, c->transport->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        /* sd-bus raised its send buffer to 8M; what it writes is taken into the counted queue instead. */
        (void) setsockopt(sd_bus_get_fd(c->bus), SOL_SOCKET, SO_SNDBUF, &(int) { BUS_SOCKET_SNDBUF }, sizeof(int));
        (void) setsockopt(c->client_fd, SOL_SOCKET, SO_SNDBUF, &(int) { BUS_SOCKET_SNDBUF }, sizeof(int));
        return 0;
}

static void connection_freep(BusConnection **c) {
        connection_free(*c);
}

static int connection_add_sources(BusConnection *c) {
        sd_event *e = c->transport->event;
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

/* A connection on the accepted `fd` (taken, whatever happens) of a peer with `creds` (taken). */
static int connection_new(Transport *s, int fd, PeerCreds *creds, BusConnection **ret) {
        _cleanup_close_ int client = fd;
        _cleanup_(connection_freep) BusConnection *c = calloc(1, sizeof(BusConnection));
        int pair[2], r;

        if (!c)
                return -ENOMEM;
        c->transport = s;
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

/* ---- the listening socket ---- */

static size_t connections_of_uid(const Transport *s, uid_t uid) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_connections; i++)
                n += !s->connections[i]->dead && s->connections[i]->creds.uid == uid;
        return n;
}

size_t transport_connections(const Transport *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_connections; i++)
                n += !s->connections[i]->dead;
        return n;
}

static void refuse(Transport *s, const PeerCreds *creds, const char *why) {
        unsigned suppressed = 0;

        if (!ratelimit_below(&s->refused_log, now_usec(CLOCK_MONOTONIC), &suppressed))
                return;
        log_warning("Control connection from pid %d (uid %u) refused: %s%s", (int) creds->pid, (unsigned) creds->uid,
                    why, suppressed ? " (similar messages were suppressed)" : "");
}

static void refuse_admission(Transport *s, const PeerCreds *creds, BusAdmission a) {
        char why[64];

        snprintf(why, sizeof(why), "too many connections%s (%d)", a == BUS_REFUSE_FULL ? "" : " of this user",
                 a == BUS_REFUSE_FULL ? BUS_CONNECTIONS_MAX : BUS_CONNECTIONS_PER_UID_MAX);
        refuse(s, creds, why);
}

/* Takes the accepted `fd`: a connection, or closed with the reason. */
static void accept_one(Transport *s, int fd) {
        _cleanup_close_ int cfd = fd;
        _cleanup_(peer_creds_clear) PeerCreds creds = {};
        PeerCreds who;
        BusConnection *c, **n;
        BusAdmission a;
        int r;

        r = read_creds(cfd, &creds);
        if (r < 0) {
                log_debug_errno(r, "Cannot read a control client's credentials, closing: %m");
                return;
        }
        a = bus_admission(transport_connections(s), connections_of_uid(s, creds.uid), creds.uid);
        if (a != BUS_ADMIT)
                return refuse_admission(s, &creds, a);
        n = realloc(s->connections, (s->n_connections + 1) * sizeof(BusConnection *));
        if (!n)
                return;
        s->connections = n;
        who = (PeerCreds) { .pid = creds.pid, .uid = creds.uid };
        r = connection_new(s, TAKE_FD(cfd), &creds, &c);
        if (r == -EMFILE || r == -ENFILE)
                return refuse(s, &who, "out of file descriptors");
        if (r < 0) {
                log_warning_errno(r, "Cannot set up a control connection: %m");
                return;
        }
        s->connections[s->n_connections++] = c;
        log_debug("Control connection %s opened", c->description);
}

/* Takes back the fds of the reserve that can be had; returns whether it is whole. */
static bool reserve_take(Transport *s) {
        bool whole = true;

        for (size_t i = 0; i < ELEMENTSOF(s->reserve); i++) {
                if (s->reserve[i] < 0)
                        s->reserve[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                whole = whole && s->reserve[i] >= 0;
        }
        return whole;
}

/* Closes the reserve; returns whether it held any fd. */
static bool reserve_release(Transport *s) {
        bool any = false;

        for (size_t i = 0; i < ELEMENTSOF(s->reserve); i++) {
                any = any || s->reserve[i] >= 0;
                closep(&s->reserve[i]);
        }
        return any;
}

/* Accepting stops (a pending connection would wake the loop again at once) until a connection
 * ends or a moment has passed. */
static void accept_pause(Transport *s, int error) {
        unsigned suppressed = 0;

        if (ratelimit_below(&s->refused_log, now_usec(CLOCK_MONOTONIC), &suppressed))
                log_warning_errno(error, "Cannot accept control connections: %m; paused for %llums%s",
                                  (unsigned long long) (BUS_ACCEPT_RETRY_USEC / USEC_PER_MSEC),
                                  suppressed ? " (similar messages were suppressed)" : "");
        (void) sd_event_source_set_enabled(s->listen_source, SD_EVENT_OFF);
        (void) sd_event_source_set_time(s->accept_retry_source, now_usec(CLOCK_MONOTONIC) + BUS_ACCEPT_RETRY_USEC);
        (void) sd_event_source_set_enabled(s->accept_retry_source, SD_EVENT_ONESHOT);
}

static void accept_resume(Transport *s) {
        (void) sd_event_source_set_enabled(s->accept_retry_source, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(s->listen_source, SD_EVENT_ON);
}

/* Out of fds: the reserve is given up for the pending connection, which is served if the reserve
 * suffices and refused (the reason logged) if not, and taken back at once. While it cannot be
 * taken back whole (a connection it served holds its fds), accepting pauses. */
static void accept_out_of_fds(Transport *s, int error) {
        int cfd = -1;

        if (reserve_release(s)) {
                cfd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd >= 0)
                        accept_one(s, cfd);
        }
        if (!reserve_take(s) || cfd < 0)
                accept_pause(s, error);
}

static int on_accept_retry(sd_event_source *src, uint64_t usec, void *userdata) {
        (void) reserve_take(userdata);
        accept_resume(userdata);
        return 0;
}

static int on_accept(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        /* A bounded batch per wakeup, so that a flood of connects cannot hold the loop. */
        for (int i = 0; i < 16; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (cfd < 0 && (errno == EMFILE || errno == ENFILE)) {
                        accept_out_of_fds(userdata, errno);
                        return 0;
                }
                if (cfd < 0 && (errno == ENOBUFS || errno == ENOMEM)) {
                        accept_pause(userdata, errno);
                        return 0;
                }
                if (cfd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_debug_errno(errno, "accept() on the control socket failed: %m");
                        return 0;
                }
                accept_one(userdata, cfd);
        }
        return 0;
}

/* Whether something answers on `path` (then another daemon serves it). */
static bool socket_alive(const struct sockaddr_un *sa) {
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        return fd >= 0 && connect(fd, (const struct sockaddr *) sa, sizeof(*sa)) == 0;
}

static int prepare_path(const char *path, const struct sockaddr_un *sa) {
        _cleanup_free_ char *dir = strdup(path);
        struct stat st;
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return log_error_errno(errno, "Cannot create %s for the control socket: %m", dir);
        }
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : log_error_errno(errno, "Cannot look at %s: %m", path);
        if (!S_ISSOCK(st.st_mode))
                return log_error_errno(EEXIST, "%s exists and is not a socket; not replacing it", path);
        if (socket_alive(sa))
                return log_error_errno(EADDRINUSE, "Another daemon answers on %s; is mdreclaimd running already?",
                                       path);
        if (unlink(path) < 0)
                return log_error_errno(errno, "Cannot remove the stale socket %s: %m", path);
        return 0;
}

static int listen_on(const char *path, int *ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "Control socket path too long: %s", path);
        strcpy(sa.sun_path, path);
        r = prepare_path(path, &sa);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(errno, "Cannot create the control socket: %m");
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return log_error_errno(errno, "Cannot bind the control socket to %s: %m", path);
        /* Anyone may connect and read; what a caller may change is checked per call. */
        if (chmod(path, 0666) < 0 || listen(fd, 64) < 0)
                return log_error_errno(errno, "Cannot set up the control socket %s: %m", path);
        *ret = TAKE_FD(fd);
        return 0;
}

/* ---- broadcasts ---- */

void transport_broadcast(Transport *s, TransportSend send_signal, const void *data) {
        for (size_t i = 0; i < s->n_connections; i++) {
                BusConnection *c = s->connections[i];
                uint64_t queued = 0;

                if (!c->subscribed || c->dead)
                        continue;
                (void) sd_bus_get_n_queued_write(c->bus, &queued);
                if (c->replies.held > BUS_HELD_MAX || queued > BUS_QUEUED_MAX) {
                        connection_log_limit(c, "it does not read the signals it subscribed to");
                        bus_connection_kill(c, "signal queue full");
                        continue;
                }
                if (send_signal(c->bus, data) < 0)
                        bus_connection_kill(c, "cannot send a signal");
        }
}

static void transport_freep(Transport **s) {
        transport_free(*s);
}

static int add_sources(Transport *s) {
        int r;

        r = sd_event_add_io(s->event, &s->listen_source, s->listen_fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return r;
        r = sd_event_add_defer(s->event, &s->reap_source, on_reap, s);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(s->reap_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        r = sd_event_add_time(s->event, &s->accept_retry_source, CLOCK_MONOTONIC, 0, 0, on_accept_retry, s);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(s->accept_retry_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->listen_source, "control-listen");
        (void) sd_event_source_set_description(s->reap_source, "control-reap");
        (void) sd_event_source_set_description(s->accept_retry_source, "control-accept-retry");
        return 0;
}

int transport_new(sd_event *event, const char *path, TransportAttach attach, void *userdata, Transport **ret) {
        _cleanup_(transport_freep) Transport *s = calloc(1, sizeof(Transport));
        int r;

        if (!s)
                return -ENOMEM;
        s->event = event;
        s->attach = attach;
        s->userdata = userdata;
        s->listen_fd = -1;
        for (size_t i = 0; i < ELEMENTSOF(s->reserve); i++)
                s->reserve[i] = -1;
        s->refused_log = (RateLimit) RATELIMIT_INIT(10 * USEC_PER_SEC, 5);
        s->path = strdup(path);
        if (!s->path)
                return -ENOMEM;
        r = listen_on(path, &s->listen_fd);
        if (r < 0)
                return r;
        r = add_sources(s);
        if (r < 0)
                return log_error_errno(r, "Cannot serve the control socket: %m");
        if (!reserve_take(s))
                log_debug_errno(errno, "Cannot keep fds in reserve for the control socket: %m");
        log_debug("Control socket on %s", path);
        *ret = TAKE_PTR(s);
        return 0;
}

Transport *transport_free(Transport *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_connections; i++)
                connection_free(s->connections[i]);
        free(s->connections);
        (void) reserve_release(s);
        sd_event_source_disable_unref(s->listen_source);
        sd_event_source_disable_unref(s->reap_source);
        sd_event_source_disable_unref(s->accept_retry_source);
        if (s->listen_fd >= 0) {
                close(s->listen_fd);
                (void) unlink(s->path);
        }
        free(s->path);
        free(s);
        return NULL;
}
