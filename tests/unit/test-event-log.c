/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the bounded ring of recent events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "event-log.h"

static void test_ring(void **state) {
        static EventLog l;
        char msg[32];

        event_log_init(&l);
        assert_int_equal(event_log_first(&l), 1);
        assert_null(event_log_get(&l, 1));

        assert_int_equal(event_log_add(&l, 5, 6, "pressure", "/a", NULL, "hello", NULL)->seq, 1);
        assert_string_equal(event_log_get(&l, 1)->message, "hello");
        assert_string_equal(event_log_get(&l, 1)->unit, "");

        for (int i = 2; i <= EVENT_LOG_SIZE + 10; i++) {
                snprintf(msg, sizeof(msg), "event %d", i);
                event_log_add(&l, (uint64_t) i, 6, "x", "/b", "b.service", msg, NULL);
        }
        /* The oldest ten fell out; sequence numbers are never reused. */
        assert_int_equal(event_log_first(&l), 11);
        assert_null(event_log_get(&l, 10));
        assert_string_equal(event_log_get(&l, 11)->message, "event 11");
        assert_string_equal(event_log_get(&l, EVENT_LOG_SIZE + 10)->message, "event 522");
        assert_null(event_log_get(&l, EVENT_LOG_SIZE + 11));
        /* Cleared, it keeps nothing, and goes on from where it was. */
        event_log_clear(&l);
        assert_int_equal(event_log_first(&l), EVENT_LOG_SIZE + 11);
        assert_null(event_log_get(&l, EVENT_LOG_SIZE + 10));
        assert_int_equal(event_log_add(&l, 1, 6, "x", NULL, NULL, "after", NULL)->seq, EVENT_LOG_SIZE + 11);
        assert_string_equal(event_log_get(&l, EVENT_LOG_SIZE + 11)->message, "after");
        assert_string_equal(event_log_get(&l, EVENT_LOG_SIZE + 11)->cgroup, "");
        event_log_clear(&l);
}

/* One from the heap starts as one set up in place does. */
static void test_new_starts_empty(void **state) {
        EventLog *l = event_log_new();

        assert_non_null(l);
        assert_int_equal(l->next_seq, 1);
        assert_int_equal(event_log_first(l), 1);
        assert_null(event_log_get(l, 1));
        assert_null(l->hook);
        assert_int_equal(event_log_add(l, 5, 6, "pressure", "/a", NULL, "hello", NULL)->seq, 1);
        assert_string_equal(event_log_get(l, 1)->message, "hello");
        /* An event never added reads as empty strings, never NULL. */
        assert_string_equal(l->ring[1].message, "");
        assert_string_equal(l->ring[1].fields, "");
        event_log_free(l);
}

static void test_long_strings_are_cut(void **state) {
        static EventLog l;
        char big[1000];

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        event_log_init(&l);
        const Event *e = event_log_add(&l, 0, 3, big, big, big, big, NULL);
        assert_int_equal(strlen(e->action), sizeof(e->action) - 1);
        assert_int_equal(strlen(e->message), EVENT_TEXT_MAX - 1);
        assert_int_equal(strlen(e->cgroup), EVENT_TEXT_MAX - 1);
        assert_int_equal(strlen(e->unit), EVENT_UNIT_MAX - 1);
        /* An event written over frees the text of the one before it (ASan's leak check says so). */
        for (int i = 0; i < EVENT_LOG_SIZE; i++)
                event_log_add(&l, 0, 3, "x", big, NULL, "short", NULL);
        e = event_log_get(&l, EVENT_LOG_SIZE + 1);
        assert_string_equal(e->message, "short");
        assert_int_equal(strlen(e->cgroup), EVENT_TEXT_MAX - 1);
        event_log_clear(&l);
}

/* What the control API sends: names and messages in their escaped form, valid UTF-8 when cut. */
static void test_names_are_escaped(void **state) {
        static EventLog l;
        char name[EVENT_TEXT_MAX + 8];
        const Event *e;

        event_log_init(&l);
        e = event_log_add(&l, 0, 6, "reclaim", "/caf\xe9", "caf\xe9", "freed /caf\xe9\n", NULL);
        assert_string_equal(e->cgroup, "/caf\\351");
        assert_string_equal(e->unit, "caf\\351");
        assert_string_equal(e->message, "freed /caf\\351\\012");
        /* Cut before a character that does not fit whole: no half of \351 or of a UTF-8 sequence. */
        memset(name, 'x', EVENT_TEXT_MAX - 3);
        strcpy(name + EVENT_TEXT_MAX - 3, "\xe9");
        e = event_log_add(&l, 0, 6, "x", name, NULL, NULL, NULL);
        assert_int_equal(strlen(e->cgroup), EVENT_TEXT_MAX - 3);
        memset(name, 'x', EVENT_TEXT_MAX - 2);
        strcpy(name + EVENT_TEXT_MAX - 2, "\xc3\xa9");
        e = event_log_add(&l, 0, 6, "x", name, NULL, NULL, NULL);
        assert_int_equal(strlen(e->cgroup), EVENT_TEXT_MAX - 2);
        event_log_clear(&l);
}

/* The fields kept with an event, in order, escaped; one that does not fit is left out whole. */
static void test_fields(void **state) {
        static EventLog l;
        char big[EVENT_FIELDS_MAX];
        const char *fields[] = { "BYTES_FREED=4096", "REASON=/caf\xe9 grew", big, "OBSERVE=no", NULL };
        const char *cursor = NULL;
        const Event *e;

        memset(big, 'x', sizeof(big) - 1);
        memcpy(big, "BIG=", 4);
        big[sizeof(big) - 1] = '\0';
        event_log_init(&l);
        e = event_log_add(&l, 0, 6, "reclaim", "/a", NULL, "m", fields);
        assert_string_equal(event_next_field(e, &cursor), "BYTES_FREED=4096");
        assert_string_equal(event_next_field(e, &cursor), "REASON=/caf\\351 grew");
        assert_string_equal(event_next_field(e, &cursor), "OBSERVE=no");
        assert_null(event_next_field(e, &cursor));
        cursor = NULL;
        e = event_log_add(&l, 0, 6, "x", NULL, NULL, NULL, NULL);
        assert_null(event_next_field(e, &cursor));
        event_log_clear(&l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ring),
                cmocka_unit_test(test_new_starts_empty),
                cmocka_unit_test(test_long_strings_are_cut),
                cmocka_unit_test(test_names_are_escaped),
                cmocka_unit_test(test_fields),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
