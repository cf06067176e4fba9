/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a control client sends, checked before sd-bus sees a byte of it: the
 * SASL lines of the authentication phase, then D-Bus messages, whose fixed
 * 16-byte header gives their length. A message over the limit, a header that
 * is not D-Bus, or an authentication phase that never ends stops the
 * connection before anything is buffered for it. Pure: bytes in, verdicts out.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Bytes the whole authentication phase may take (sd-bus's client sends ~60). */
#define BUS_STREAM_AUTH_MAX 4096
/* Size of a message's fixed header. */
#define BUS_STREAM_HEADER_SIZE 16
/* No valid message is shorter: the header plus at least one header field. */
#define BUS_STREAM_MESSAGE_MIN 24

typedef enum BusStreamState {
        BUS_STREAM_AUTH_NUL,    /* the single NUL byte a client starts with */
        BUS_STREAM_AUTH,        /* CRLF-terminated lines until "BEGIN" */
        BUS_STREAM_HEADER,      /* a message's fixed header */
        BUS_STREAM_BODY,        /* the rest of the message */
} BusStreamState;

typedef struct BusStream {
        BusStreamState state;
        uint32_t max_message;           /* whole message, header included */
        size_t auth_bytes;
        char line[8];                   /* the start of the current auth line */
        size_t line_len;
        uint8_t header[BUS_STREAM_HEADER_SIZE];
        size_t header_len;
        uint64_t body_left;
        uint64_t n_messages;            /* messages seen whole */
} BusStream;

void bus_stream_init(BusStream *s, uint32_t max_message);

/*
 * Checks `size` more bytes of the stream. At a message boundary it stops when
 * *budget (messages that may still start) is 0; each message that starts
 * takes one. Returns 0 with the bytes accepted in *ret_consumed (fewer than
 * `size` only when the budget ran out), or a negative errno: -EMSGSIZE for a
 * message over the limit, -EBADMSG for a header that is not D-Bus, -EPROTO for
 * an authentication phase that is malformed or too long. After an error the
 * stream must be dropped.
 */
int bus_stream_feed(BusStream *s, const uint8_t *data, size_t size, uint64_t *budget, size_t *ret_consumed);

/* Whether the stream is between messages (nothing of a message pending). */
static inline int bus_stream_at_boundary(const BusStream *s) {
        return s->state == BUS_STREAM_HEADER && s->header_len == 0;
}
