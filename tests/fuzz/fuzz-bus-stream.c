/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the control socket's stream check (bus-stream.c), the
 * first code that sees a client's bytes. The first input byte chooses the
 * size limit and how the rest is cut into pieces and budgets; the rest is the
 * stream. Fed whole with an unlimited budget, and fed in pieces with small
 * budgets, it must give the same verdict and count the same messages; no
 * message over the limit is ever counted whole.
 */
#include <errno.h>
#include <stdbool.h>

#include "bus-stream.h"
#include "fuzz.h"

/* Feeds the whole of data[0..size) in pieces of `piece` bytes, a budget of `budget` per call. */
static int feed_pieces(BusStream *s, const uint8_t *data, size_t size, size_t piece, uint64_t budget) {
        size_t off = 0;

        while (off < size) {
                size_t len = size - off < piece ? size - off : piece, consumed = 0;
                uint64_t b = budget;
                int r = bus_stream_feed(s, data + off, len, &b, &consumed);

                if (r < 0)
                        return r;
                fuzz_check(consumed <= len);
                fuzz_check(b <= budget);
                /* Stopping early happens only at a boundary, with the budget spent. */
                fuzz_check(consumed == len || (b == 0 && bus_stream_at_boundary(s)));
                off += consumed;
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BusStream whole, pieces;
        uint64_t budget = UINT64_MAX;
        size_t consumed = 0, piece;
        uint32_t limit;
        char *copy;
        int a, b;

        if (size < 1)
                return 0;
        limit = BUS_STREAM_MESSAGE_MIN + (uint32_t) (data[0] & 0x0f) * 64;
        piece = 1 + (data[0] >> 4);
        /* An exact-size heap block, so that ASan sees any read past the end. */
        copy = fuzz_memdup(data + 1, size - 1);
        bus_stream_init(&whole, limit);
        a = bus_stream_feed(&whole, (const uint8_t *) copy, size - 1, &budget, &consumed);
        fuzz_check(a == 0 || a == -EMSGSIZE || a == -EBADMSG || a == -EPROTO);
        fuzz_check(a < 0 || consumed == size - 1);
        bus_stream_init(&pieces, limit);
        b = feed_pieces(&pieces, (const uint8_t *) copy, size - 1, piece, 1 + (data[0] & 1));
        fuzz_check(a == b);
        if (a == 0) {
                fuzz_check(whole.n_messages == pieces.n_messages);
                fuzz_check(whole.state == pieces.state);
                fuzz_check(whole.auth_bytes <= BUS_STREAM_AUTH_MAX);
                /* Every message counted was at least the minimum and at most the limit. */
                fuzz_check(whole.n_messages * BUS_STREAM_MESSAGE_MIN <= size);
        }
        free(copy);
        return 0;
}
