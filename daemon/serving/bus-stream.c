/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "bus-stream.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "util.h"

void bus_stream_init(BusStream *s, uint32_t max_message) {
        *s = (BusStream) { .state = BUS_STREAM_AUTH_NUL, .max_message = max_message };
}

/* One byte of the authentication phase. Returns 0 or -EPROTO. */
static int auth_byte(BusStream *s, uint8_t c) {
        if (++s->auth_bytes > BUS_STREAM_AUTH_MAX)
                return -EPROTO;
        if (s->state == BUS_STREAM_AUTH_NUL) {
                if (c != 0)
                        return -EPROTO;
                s->state = BUS_STREAM_AUTH;
                return 0;
        }
        if (c == 0)
                return -EPROTO;
        if (c != '\n') {
                if (s->line_len < sizeof(s->line))
                        s->line[s->line_len] = (char) c;
                s->line_len++;
                return 0;
        }
        /* A line ends: "BEGIN\r\n" ends the phase. */
        if (s->line_len == 6 && memcmp(s->line, "BEGIN\r", 6) == 0)
                s->state = BUS_STREAM_HEADER;
        s->line_len = 0;
        return 0;
}

static uint32_t header_u32(const BusStream *s, size_t offset) {
        uint32_t v;

        memcpy(&v, s->header + offset, sizeof(v));
        return s->header[0] == 'l' ? le32toh(v) : be32toh(v);
}

/* The fixed header is complete: check it and learn the message's length. */
static int header_done(BusStream *s) {
        uint64_t fields, total;

        if (s->header[0] != 'l' && s->header[0] != 'B')
                return -EBADMSG;
        if (s->header[1] < 1 || s->header[1] > 4 || s->header[3] != 1)
                return -EBADMSG;
        fields = header_u32(s, 12);
        total = BUS_STREAM_HEADER_SIZE + ((fields + 7) & ~UINT64_C(7)) + header_u32(s, 4);
        if (fields == 0 || total < BUS_STREAM_MESSAGE_MIN)
                return -EBADMSG;
        if (total > s->max_message)
                return -EMSGSIZE;
        s->body_left = total - BUS_STREAM_HEADER_SIZE;
        s->state = BUS_STREAM_BODY;
        return 0;
}

int bus_stream_feed(BusStream *s, const uint8_t *data, size_t size, uint64_t *budget, size_t *ret_consumed) {
        size_t i = 0;
        int r;

        while (i < size) {
                switch (s->state) {
                case BUS_STREAM_AUTH_NUL:
                case BUS_STREAM_AUTH:
                        r = auth_byte(s, data[i++]);
                        if (r < 0)
                                return r;
                        break;
                case BUS_STREAM_HEADER:
                        if (s->header_len == 0) {
                                if (*budget == 0)
                                        goto done;
                                (*budget)--;
                        }
                        s->header[s->header_len++] = data[i++];
                        if (s->header_len == BUS_STREAM_HEADER_SIZE) {
                                r = header_done(s);
                                if (r < 0)
                                        return r;
                        }
                        break;
                case BUS_STREAM_BODY: {
                        size_t n = (size_t) MIN((uint64_t) (size - i), s->body_left);

                        i += n;
                        s->body_left -= n;
                        if (s->body_left == 0) {
                                s->state = BUS_STREAM_HEADER;
                                s->header_len = 0;
                                s->n_messages++;
                        }
                        break;
                }
                }
        }
done:
        *ret_consumed = i;
        return 0;
}
