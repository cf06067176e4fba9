/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "reply-queue.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

void reply_queue_clear(ReplyQueue *q, size_t *total) {
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

int reply_queue_fill(ReplyQueue *q, int fd, size_t *total) {
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

int reply_queue_flush(ReplyQueue *q, int fd, size_t *total) {
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
