/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The task queue: tasks run in order off the loop and come back on it; a
 * task past its budget is interrupted; a cancelled one is interrupted or
 * never run; a full queue says so; a stop interrupts the running task, drops
 * the queued ones, and abandons a task that will not return rather than wait
 * for it; queues stopped together are waited for together.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <unistd.h>
#include <cmocka.h>

#include "taskq.h"
#include "util.h"

typedef struct T {
        Task task;
        int id;
        int result;
        unsigned kind;          /* 0: nothing, 1: a blocked read, 2: ignores every signal for 30 s (it
                                 * outlives the program: the queue it abandons stays referenced from its
                                 * thread, not leaked) */
        int *order, *n_order, *dropped;
} T;

static void t_run(Task *task) {
        T *t = (T *) task;
        int p[2];
        char c;

        if (t->kind == 1 && pipe(p) == 0) {
                /* Nobody writes: only the budget's signal ends it. */
                t->result = read(p[0], &c, 1) < 0 ? -errno : 0;
                close(p[0]);
                close(p[1]);
        } else if (t->kind == 2) {
                uint64_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
                while (now_usec(CLOCK_MONOTONIC) < end)
                        (void) usleep(10000);
        }
}

static int last_result;

static void t_done(Task *task, void *userdata) {
        T *t = (T *) task;

        last_result = t->result;
        t->order[(*t->n_order)++] = t->id;
        free(t);
}

static void t_drop(Task *task, void *userdata) {
        T *t = (T *) task;

        (*t->dropped)++;
        free(t);
}

static T *t_new(int id, unsigned kind, uint64_t budget, int *order, int *n_order, int *dropped) {
        T *t = calloc(1, sizeof(T));

        assert_non_null(t);
        *t = (T) { .task = { .run = t_run, .done = t_done, .drop = t_drop, .budget_usec = budget },
                   .id = id, .kind = kind, .order = order, .n_order = n_order, .dropped = dropped };
        return t;
}

static void run_until(sd_event *e, int *n, int want) {
        for (int i = 0; i < 300 && *n < want; i++)
                (void) sd_event_run(e, 10000);
}

static void test_order_and_full(void **state) {
        sd_event *e = NULL;
        TaskQueue *q = NULL;
        int order[8], n = 0, dropped = 0;
        T *extra;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(taskq_new(e, "test", 3, true, NULL, &q), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(taskq_submit(q, &t_new(i, 0, 0, order, &n, &dropped)->task), 0);
        extra = t_new(9, 0, 0, order, &n, &dropped);
        assert_int_equal(taskq_submit(q, &extra->task), -EBUSY);
        free(extra);
        run_until(e, &n, 3);
        assert_int_equal(n, 3);
        assert_int_equal(order[0], 0);
        assert_int_equal(order[2], 2);
        assert_int_equal(taskq_pending(q), 0);
        taskq_free(q);
        sd_event_unref(e);
}

static void test_budget_interrupts(void **state) {
        sd_event *e = NULL;
        TaskQueue *q = NULL;
        int order[2], n = 0, dropped = 0;
        T *t = t_new(1, 1, 100 * USEC_PER_MSEC, order, &n, &dropped);
        uint64_t t0 = now_usec(CLOCK_MONOTONIC);

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(taskq_new(e, "test", 2, true, NULL, &q), 0);
        assert_int_equal(taskq_submit(q, &t->task), 0);
        run_until(e, &n, 1);
        assert_int_equal(n, 1);
        assert_int_equal(last_result, -EINTR);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 2 * USEC_PER_SEC);
        taskq_free(q);
        sd_event_unref(e);
}

static bool is_id(const Task *task, void *arg) {
        return ((const T *) task)->id == *(int *) arg;
}

/* A cancelled task that is running is interrupted; one still queued comes back without running. */
static void test_cancel(void **state) {
        sd_event *e = NULL;
        TaskQueue *q = NULL;
        int order[4], n = 0, dropped = 0, id;
        T *blocked = t_new(1, 1, 10 * USEC_PER_SEC, order, &n, &dropped), *queued = t_new(2, 1, 0, order, &n, &dropped);
        uint64_t t0;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(taskq_new(e, "test", 4, true, NULL, &q), 0);
        assert_int_equal(taskq_submit(q, &blocked->task), 0);
        assert_int_equal(taskq_submit(q, &queued->task), 0);
        for (int i = 0; i < 200 && !taskq_running(q); i++)
                (void) usleep(5000);
        assert_ptr_equal(taskq_running(q), &blocked->task);
        id = 3;
        assert_int_equal(taskq_cancel(q, is_id, &id), 0);
        /* The queued one first: were it run, its read would block with no budget to end it. */
        id = 2;
        assert_int_equal(taskq_cancel(q, is_id, &id), 1);
        assert_int_equal(taskq_cancel(q, is_id, &id), 0);       /* once */
        t0 = now_usec(CLOCK_MONOTONIC);
        id = 1;
        assert_int_equal(taskq_cancel(q, is_id, &id), 1);
        run_until(e, &n, 2);
        assert_int_equal(n, 2);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 2 * USEC_PER_SEC);
        assert_int_equal(order[0], 1);
        assert_int_equal(order[1], 2);
        assert_int_equal(last_result, 0);       /* the queued one never ran */
        taskq_free(q);
        sd_event_unref(e);
}

static void test_stop_abandons_what_will_not_return(void **state) {
        sd_event *e = NULL;
        TaskQueue *q = NULL;
        int order[4], n = 0, dropped = 0;
        uint64_t t0;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(taskq_new(e, "test", 4, true, NULL, &q), 0);
        assert_int_equal(taskq_submit(q, &t_new(1, 2, 0, order, &n, &dropped)->task), 0);
        assert_int_equal(taskq_submit(q, &t_new(2, 0, 0, order, &n, &dropped)->task), 0);
        (void) usleep(100000);  /* the first is running */
        t0 = now_usec(CLOCK_MONOTONIC);
        taskq_free(q);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 2 * USEC_PER_SEC);
        assert_int_equal(n, 0);
        sd_event_unref(e);
}

/* Queues told to stop together are waited for together: two tasks that will not return cost one
 * wait (1.5 s), not one each. */
static void test_stopped_together_waited_together(void **state) {
        sd_event *e = NULL;
        TaskQueue *q[2] = {};
        int order[2], n = 0, dropped = 0;
        uint64_t t0;

        assert_int_equal(sd_event_new(&e), 0);
        for (size_t i = 0; i < 2; i++) {
                assert_int_equal(taskq_new(e, "test", 2, true, NULL, &q[i]), 0);
                assert_int_equal(taskq_submit(q[i], &t_new((int) i, 2, 0, order, &n, &dropped)->task), 0);
        }
        for (int i = 0; i < 300 && !(taskq_running(q[0]) && taskq_running(q[1])); i++)
                (void) usleep(10000);
        assert_true(taskq_running(q[0]) && taskq_running(q[1]));       /* both run: neither is dropped */
        t0 = now_usec(CLOCK_MONOTONIC);
        taskq_stop(q[0]);
        taskq_stop(q[1]);
        taskq_free(q[0]);
        taskq_free(q[1]);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 2 * USEC_PER_SEC);
        assert_int_equal(n, 0);
        assert_int_equal(dropped, 0);
        sd_event_unref(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order_and_full),
                cmocka_unit_test(test_budget_interrupts),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_stop_abandons_what_will_not_return),
                cmocka_unit_test(test_stopped_together_waited_together),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
