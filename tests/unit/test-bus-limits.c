/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the control socket's admission, request pacing and admin check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "bus-limits.h"
#include "util.h"

static void test_admission(void **state) {
        assert_int_equal(bus_admission(0, 0, 1000), BUS_ADMIT);
        assert_int_equal(bus_admission(BUS_CONNECTIONS_MAX - 1, 0, 1000), BUS_ADMIT);
        assert_int_equal(bus_admission(BUS_CONNECTIONS_MAX, 0, 1000), BUS_REFUSE_FULL);
        assert_int_equal(bus_admission(10, BUS_CONNECTIONS_PER_UID_MAX - 1, 1000), BUS_ADMIT);
        assert_int_equal(bus_admission(10, BUS_CONNECTIONS_PER_UID_MAX, 1000), BUS_REFUSE_USER);
        /* Root: no per-user cap, and a reserve beyond the others' limit. */
        assert_int_equal(bus_admission(10, 40, 0), BUS_ADMIT);
        assert_int_equal(bus_admission(BUS_CONNECTIONS_MAX, 0, 0), BUS_ADMIT);
        assert_int_equal(bus_admission(BUS_CONNECTIONS_MAX + BUS_CONNECTIONS_ROOT_RESERVE - 1, 0, 0), BUS_ADMIT);
        assert_int_equal(bus_admission(BUS_CONNECTIONS_MAX + BUS_CONNECTIONS_ROOT_RESERVE, 0, 0), BUS_REFUSE_FULL);
}

static void test_token_bucket(void **state) {
        TokenBucket b;
        uint64_t t = 1000 * USEC_PER_SEC;

        token_bucket_init(&b, 50, 100, t);
        assert_int_equal(token_bucket_available(&b, t), 100);
        token_bucket_take(&b, 100);
        assert_int_equal(token_bucket_available(&b, t), 0);
        /* One token every 20ms. */
        assert_int_equal(token_bucket_wait_usec(&b), 20000);
        assert_int_equal(token_bucket_available(&b, t + 19999), 0);
        assert_int_equal(token_bucket_wait_usec(&b), 1);
        assert_int_equal(token_bucket_available(&b, t + 20000), 1);
        assert_int_equal(token_bucket_wait_usec(&b), 0);
        assert_int_equal(token_bucket_available(&b, t + USEC_PER_SEC), 50);
        /* Never more than the burst, however long it was idle. */
        assert_int_equal(token_bucket_available(&b, t + 3600 * USEC_PER_SEC), 100);
        assert_int_equal(token_bucket_available(&b, UINT64_MAX), 100);
        /* Time going backwards adds nothing. */
        token_bucket_take(&b, 100);
        assert_int_equal(token_bucket_available(&b, t), 0);
        /* Taking more than there is leaves zero. */
        token_bucket_take(&b, 5);
        assert_int_equal(token_bucket_available(&b, UINT64_MAX), 0);
}

static void test_admin(void **state) {
        gid_t groups[] = { 10, 4242, 20 };
        PeerCreds root = { .uid = 0, .gid = 0 };
        PeerCreds user = { .uid = 1000, .gid = 1000 };
        PeerCreds member = { .uid = 1000, .gid = 1000, .groups = groups, .n_groups = 3 };
        PeerCreds primary = { .uid = 1000, .gid = 4242 };

        assert_true(peer_creds_is_admin(&root, false, 0));
        assert_true(peer_creds_is_admin(&root, true, 4242));
        assert_false(peer_creds_is_admin(&user, false, 0));
        assert_false(peer_creds_is_admin(&user, true, 4242));
        assert_false(peer_creds_is_admin(&member, false, 4242));
        assert_true(peer_creds_is_admin(&member, true, 4242));
        assert_false(peer_creds_is_admin(&member, true, 4243));
        assert_true(peer_creds_is_admin(&primary, true, 4242));
        /* gid 0 as AdminGroup= is the root group, not a wildcard. */
        assert_false(peer_creds_is_admin(&user, true, 0));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_admission),
                cmocka_unit_test(test_token_bucket),
                cmocka_unit_test(test_admin),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
