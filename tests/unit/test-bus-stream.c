/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the control socket's stream check: the authentication
 * phase, message framing and size, the request budget, and that feeding the
 * same bytes in any pieces gives the same verdict.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "bus-stream.h"

static const char auth[] = "\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n";
#define AUTH_LEN (sizeof(auth) - 1)

/* A little-endian message: header, `fields` bytes of fields (padded to 8), `body` bytes of body. */
static size_t message(uint8_t *buf, char endian, uint32_t fields, uint32_t body) {
        uint32_t f = endian == 'l' ? htole32(fields) : htobe32(fields);
        uint32_t b = endian == 'l' ? htole32(body) : htobe32(body);
        size_t total = 16 + ((fields + 7u) & ~7u) + body;

        memset(buf, 0xaa, total);
        buf[0] = (uint8_t) endian;
        buf[1] = 1;
        buf[2] = 0;
        buf[3] = 1;
        memcpy(buf + 4, &b, 4);
        memcpy(buf + 12, &f, 4);
        return total;
}

static int feed_all(BusStream *s, const uint8_t *p, size_t n, size_t *consumed) {
        uint64_t budget = UINT64_MAX;
        return bus_stream_feed(s, p, n, &budget, consumed);
}

static void test_auth_then_messages(void **state) {
        uint8_t buf[4096];
        size_t n = 0, consumed;
        BusStream s;

        memcpy(buf, auth, AUTH_LEN);
        n = AUTH_LEN;
        n += message(buf + n, 'l', 60, 0);
        n += message(buf + n, 'B', 61, 100);
        bus_stream_init(&s, 1024);
        assert_int_equal(feed_all(&s, buf, n, &consumed), 0);
        assert_int_equal(consumed, n);
        assert_int_equal(s.n_messages, 2);
        assert_true(bus_stream_at_boundary(&s));
}

static void test_pieces_make_no_difference(void **state) {
        uint8_t buf[4096];
        size_t n, consumed;

        memcpy(buf, auth, AUTH_LEN);
        n = AUTH_LEN + message(buf + AUTH_LEN, 'l', 100, 300);
        n += message(buf + n, 'l', 24, 8);
        for (size_t piece = 1; piece <= 17; piece++) {
                BusStream s;

                bus_stream_init(&s, 1024);
                for (size_t off = 0; off < n; off += piece) {
                        size_t len = off + piece > n ? n - off : piece;
                        assert_int_equal(feed_all(&s, buf + off, len, &consumed), 0);
                        assert_int_equal(consumed, len);
                }
                assert_int_equal(s.n_messages, 2);
                assert_true(bus_stream_at_boundary(&s));
        }
}

static void test_size_limit(void **state) {
        uint8_t buf[4096];
        size_t n, consumed;
        BusStream s;

        /* Exactly the limit passes; one byte more does not, before any of its body is taken. */
        bus_stream_init(&s, 16 + 64 + 16);
        memcpy(buf, auth, AUTH_LEN);
        n = AUTH_LEN + message(buf + AUTH_LEN, 'l', 64, 16);
        assert_int_equal(feed_all(&s, buf, n, &consumed), 0);
        n = message(buf, 'l', 64, 17);
        assert_int_equal(feed_all(&s, buf, 16, &consumed), -EMSGSIZE);

        /* A header announcing 4 GiB is refused, not believed. */
        bus_stream_init(&s, BUS_STREAM_AUTH_MAX);
        assert_int_equal(feed_all(&s, (const uint8_t *) auth, AUTH_LEN, &consumed), 0);
        message(buf, 'l', UINT32_MAX, UINT32_MAX);
        assert_int_equal(feed_all(&s, buf, 16, &consumed), -EMSGSIZE);
}

static void test_bad_headers(void **state) {
        static const struct { size_t offset; uint8_t value; } breakage[] = {
                { 0, 'x' },     /* endianness */
                { 1, 0 },       /* type 0 */
                { 1, 5 },       /* type 5 */
                { 3, 2 },       /* protocol version */
        };
        uint8_t buf[256];
        size_t consumed;

        for (size_t i = 0; i < sizeof(breakage) / sizeof(breakage[0]); i++) {
                BusStream s;

                bus_stream_init(&s, 1024);
                assert_int_equal(feed_all(&s, (const uint8_t *) auth, AUTH_LEN, &consumed), 0);
                message(buf, 'l', 40, 0);
                buf[breakage[i].offset] = breakage[i].value;
                assert_int_equal(feed_all(&s, buf, 16, &consumed), -EBADMSG);
        }
        /* Without header fields a message is shorter than any valid one. */
        BusStream s;
        bus_stream_init(&s, 1024);
        assert_int_equal(feed_all(&s, (const uint8_t *) auth, AUTH_LEN, &consumed), 0);
        message(buf, 'l', 0, 8);
        assert_int_equal(feed_all(&s, buf, 16, &consumed), -EBADMSG);
}

static void test_auth_phase(void **state) {
        uint8_t buf[BUS_STREAM_AUTH_MAX + 16];
        size_t consumed;
        BusStream s;

        /* The first byte must be NUL. */
        bus_stream_init(&s, 1024);
        assert_int_equal(feed_all(&s, (const uint8_t *) "AUTH", 4, &consumed), -EPROTO);

        /* A NUL inside the lines is not SASL. */
        bus_stream_init(&s, 1024);
        assert_int_equal(feed_all(&s, (const uint8_t *) "\0AU\0TH", 6, &consumed), -EPROTO);

        /* An authentication phase that never says BEGIN is cut at the limit. */
        bus_stream_init(&s, 1024);
        memset(buf, 'A', sizeof(buf));
        buf[0] = 0;
        assert_int_equal(feed_all(&s, buf, BUS_STREAM_AUTH_MAX, &consumed), 0);
        assert_int_equal(feed_all(&s, buf + 1, 1, &consumed), -EPROTO);

        /* "BEGINNING" or "BEGIN" without CR is not BEGIN: still authenticating. */
        bus_stream_init(&s, 1024);
        assert_int_equal(feed_all(&s, (const uint8_t *) "\0BEGINNING\r\nBEGIN\n", 18, &consumed), 0);
        assert_int_equal(s.state, BUS_STREAM_AUTH);
        assert_int_equal(feed_all(&s, (const uint8_t *) "BEGIN\r\n", 7, &consumed), 0);
        assert_int_equal(s.state, BUS_STREAM_HEADER);
}

static void test_budget_stops_at_a_boundary(void **state) {
        uint8_t buf[4096];
        size_t n = 0, consumed, first;
        uint64_t budget = 1;
        BusStream s;

        bus_stream_init(&s, 1024);
        memcpy(buf, auth, AUTH_LEN);
        n = AUTH_LEN;
        first = n += message(buf + n, 'l', 40, 8);
        n += message(buf + n, 'l', 40, 8);
        n += message(buf + n, 'l', 40, 8);
        /* One message may start: the stream stops right before the second. */
        assert_int_equal(bus_stream_feed(&s, buf, n, &budget, &consumed), 0);
        assert_int_equal(consumed, first);
        assert_int_equal(budget, 0);
        assert_true(bus_stream_at_boundary(&s));
        /* No budget: nothing taken. */
        assert_int_equal(bus_stream_feed(&s, buf + consumed, n - consumed, &budget, &consumed), 0);
        assert_int_equal(consumed, 0);
        /* Budget for more than is there: all taken, the rest of the budget kept. */
        budget = 5;
        assert_int_equal(bus_stream_feed(&s, buf + first, n - first, &budget, &consumed), 0);
        assert_int_equal(consumed, n - first);
        assert_int_equal(budget, 3);
        assert_int_equal(s.n_messages, 3);
}

static void test_budget_not_taken_by_auth(void **state) {
        size_t consumed;
        uint64_t budget = 0;
        BusStream s;

        bus_stream_init(&s, 1024);
        assert_int_equal(bus_stream_feed(&s, (const uint8_t *) auth, AUTH_LEN, &budget, &consumed), 0);
        assert_int_equal(consumed, AUTH_LEN);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_auth_then_messages),
                cmocka_unit_test(test_pieces_make_no_difference),
                cmocka_unit_test(test_size_limit),
                cmocka_unit_test(test_bad_headers),
                cmocka_unit_test(test_auth_phase),
                cmocka_unit_test(test_budget_stops_at_a_boundary),
                cmocka_unit_test(test_budget_not_taken_by_auth),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
