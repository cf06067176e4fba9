/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* ---- the listening socket ---- */

/* The peer's pid, uid, gid and groups, from its socket. */
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

static size_t connections_of_uid(const Transport *s, uid_t uid) {
        size_t n = 0;

        for (size_t i = 0; i < s->set.n_connections; i++)
                n += !s->set.connections[i]->dead && s->set.connections[i]->creds.uid == uid;
        return n;
}

size_t transport_connections(const Transport *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->set.n_connections; i++)
                n += !s->set.connections[i]->dead;
        return n;
}

static void refuse(Transport *s, const PeerCreds *creds, const char *why) {
        unsigned suppressed = 0;

        if (!ratelimit_below(&s->set.refused_log, now_usec(CLOCK_MONOTONIC), &suppressed))
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
        n = realloc(s->set.connections, (s->set.n_connections + 1) * sizeof(BusConnection *));
        if (!n)
                return;
        s->set.connections = n;
        who = (PeerCreds) { .pid = creds.pid, .uid = creds.uid };
        r = bus_connection_new(&s->set, TAKE_FD(cfd), &creds, &c);
        if (r == -EMFILE || r == -ENFILE)
                return refuse(s, &who, "out of file descriptors");
        if (r < 0) {
                log_warning_errno(r, "Cannot set up a control connection: %m");
                return;
        }
        s->set.connections[s->set.n_connections++] = c;
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

        if (ratelimit_below(&s->set.refused_log, now_usec(CLOCK_MONOTONIC), &suppressed))
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

/* Frees the connections that ended, outside their own callbacks. */
static int on_reap(sd_event_source *src, void *userdata) {
        Transport *s = userdata;
        size_t j = 0;

        for (size_t i = 0; i < s->set.n_connections; i++) {
                if (s->set.connections[i]->dead)
                        bus_connection_free(s->set.connections[i]);
                else
                        s->set.connections[j++] = s->set.connections[i];
        }
        s->set.n_connections = j;
        /* A connection that ended freed its fds: the reserve first, then accepting if it was paused. */
        (void) reserve_take(s);
        if (sd_event_source_get_enabled(s->accept_retry_source, NULL) > 0)
                accept_resume(s);
        return 0;
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
        for (size_t i = 0; i < s->set.n_connections; i++) {
                BusConnection *c = s->set.connections[i];
                uint64_t queued = 0;

                if (!c->subscribed || c->dead)
                        continue;
                (void) sd_bus_get_n_queued_write(c->bus, &queued);
                if (c->replies.held > BUS_HELD_MAX || queued > BUS_QUEUED_MAX) {
                        bus_connection_drop(c, "it does not read the signals it subscribed to", "signal queue full");
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

        r = sd_event_add_io(s->set.event, &s->listen_source, s->listen_fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return r;
        r = sd_event_add_defer(s->set.event, &s->set.reap_source, on_reap, s);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(s->set.reap_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        r = sd_event_add_time(s->set.event, &s->accept_retry_source, CLOCK_MONOTONIC, 0, 0, on_accept_retry, s);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(s->accept_retry_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->listen_source, "control-listen");
        (void) sd_event_source_set_description(s->set.reap_source, "control-reap");
        (void) sd_event_source_set_description(s->accept_retry_source, "control-accept-retry");
        return 0;
}

int transport_new(sd_event *event, const char *path, ConnectionAttach attach, void *userdata, Transport **ret) {
        _cleanup_(transport_freep) Transport *s = calloc(1, sizeof(Transport));
        int r;

        if (!s)
                return -ENOMEM;
        s->set.event = event;
        s->set.attach = attach;
        s->set.userdata = userdata;
        s->listen_fd = -1;
        for (size_t i = 0; i < ELEMENTSOF(s->reserve); i++)
                s->reserve[i] = -1;
        s->set.refused_log = (RateLimit) RATELIMIT_INIT(10 * USEC_PER_SEC, 5);
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
        for (size_t i = 0; i < s->set.n_connections; i++)
                bus_connection_free(s->set.connections[i]);
        free(s->set.connections);
        (void) reserve_release(s);
        sd_event_source_disable_unref(s->listen_source);
        sd_event_source_disable_unref(s->set.reap_source);
        sd_event_source_disable_unref(s->accept_retry_source);
        if (s->listen_fd >= 0) {
                close(s->listen_fd);
                (void) unlink(s->path);
        }
        free(s->path);
        free(s);
        return NULL;
}
