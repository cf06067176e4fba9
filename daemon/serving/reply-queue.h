/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What sd-bus wrote for a client that the client has not read yet: chunks
 * filled from sd-bus's end of the socketpair and emptied into the client's
 * socket, neither ever blocking. Every chunk is counted twice, in its queue
 * and in a total the caller keeps over all clients (the bound on the memory
 * held for them, bus-limits.h).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Replies are kept in pieces of this size (the unit in which memory held for clients is counted). */
#define BUS_REPLY_CHUNK 65536

typedef struct ReplyChunk {
        struct ReplyChunk *next;
        size_t head, tail;              /* data[head..tail) waits for the client */
        uint8_t data[BUS_REPLY_CHUNK];
} ReplyChunk;

typedef struct ReplyQueue {
        ReplyChunk *first, *last;
        size_t held;                    /* bytes allocated for it */
} ReplyQueue;

/* Frees every chunk, and takes what the queue held off `total`. */
void reply_queue_clear(ReplyQueue *q, size_t *total);

/* Takes all that waits on `fd`, a chunk added only when there is something to put in it. Returns 0,
 * or a negative errno (-ECONNRESET: the other end closed). */
int reply_queue_fill(ReplyQueue *q, int fd, size_t *total);

/* Writes what waits to `fd` until it would block, freeing the chunks emptied. Returns 0 or a negative
 * errno. */
int reply_queue_flush(ReplyQueue *q, int fd, size_t *total);
