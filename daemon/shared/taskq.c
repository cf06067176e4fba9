/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "taskq.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* Delivered to a queue's thread alone when its task overruns its budget, or at stop. */
#define TASKQ_SIGNAL SIGUSR2
/* How long a stop waits for a task that was told to stop; past it the task is abandoned. */
#define TASKQ_STOP_WAIT_USEC (1500 * USEC_PER_MSEC)

typedef struct TaskList {
        Task *head, *tail;
        size_t n;
} TaskList;

struct TaskQueue {
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_cond_t exited_cond;     /* CLOCK_MONOTONIC: signalled when the thread is about to end */
        bool exited;
        bool stop;                      /* read by taskq_stopping() without the lock */
        uint64_t stop_deadline;         /* CLOCK_MONOTONIC: taskq_stop() waits for the running task until then */
        bool interrupt_at_stop;
        size_t max;
        TaskList queued, done;
        Task *running;
        timer_t timer;
        bool have_timer;
        int efd;
        sd_event_source *source;
        void *userdata;
        char comm[16];                  /* the thread's name (15 bytes at most, as the kernel keeps it) */
};

static __thread TaskQueue *current_queue;

static void list_push(TaskList *l, Task *t) {
        t->next = NULL;
        if (l->tail)
                l->tail->next = t;
        else
                l->head = t;
        l->tail = t;
        l->n++;
}

static Task *list_pop(TaskList *l) {
        Task *t = l->head;

        if (!t)
                return NULL;
        l->head = t->next;
        if (!l->head)
                l->tail = NULL;
        l->n--;
        return t;
}

static void list_drop(TaskList *l, void *userdata) {
        Task *t;

        while ((t = list_pop(l)))
                t->drop(t, userdata);
}

static void on_signal(int sig) {
        /* Nothing: its arrival makes the blocked call return early. */
}

static void arm_budget(TaskQueue *q, uint64_t usec) {
        struct itimerspec its = { .it_value = timespec_from_usec(usec) };

        if (q->have_timer)
                (void) timer_settime(q->timer, 0, &its, NULL);
}

static void run_one(TaskQueue *q, Task *t) {
        if (t->budget_usec)
                arm_budget(q, t->budget_usec);
        t->run(t);
        if (t->budget_usec)
                arm_budget(q, 0);
}

/*
 * A running task that was cancelled is interrupted now and every 5 ms after,
 * until it returns: one signal could come between its last check and the
 * blocking call it was about to make, and be spent before it.
 */
static void interrupt_until_done(TaskQueue *q) {
        struct itimerspec its = { .it_value = { .tv_nsec = 1000 }, .it_interval = { .tv_nsec = 5000000 } };

        pthread_kill(q->thread, TASKQ_SIGNAL);
        if (q->have_timer)
                (void) timer_settime(q->timer, 0, &its, NULL);
}

static void *taskq_main(void *arg) {
        TaskQueue *q = arg;
        struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = TASKQ_SIGNAL };
        sigset_t ss;

        /* Every process signal is the loop's (signalfd); this thread takes only its own. */
        sigfillset(&ss);
        sigdelset(&ss, TASKQ_SIGNAL);
        pthread_sigmask(SIG_SETMASK, &ss, NULL);
        /* Named by itself: another thread could only write /proc/self/task/TID/comm. */
        (void) prctl(PR_SET_NAME, q->comm);
        sev._sigev_un._tid = (pid_t) syscall(SYS_gettid);
        q->have_timer = timer_create(CLOCK_MONOTONIC, &sev, &q->timer) == 0;
        current_queue = q;

        pthread_mutex_lock(&q->lock);
        for (;;) {
                uint64_t one = 1;

                while (!q->stop && q->queued.n == 0)
                        pthread_cond_wait(&q->wake, &q->lock);
                if (q->stop)
                        break;
                q->running = list_pop(&q->queued);
                pthread_mutex_unlock(&q->lock);

                if (!taskq_cancelled(q->running))
                        run_one(q, q->running);

                pthread_mutex_lock(&q->lock);
                /* Under the lock: no cancel can arm the timer again for this task. */
                if (taskq_cancelled(q->running))
                        arm_budget(q, 0);
                list_push(&q->done, TAKE_PTR(q->running));
                if (write(q->efd, &one, sizeof(one)) < 0)
                        log_debug_errno(errno, "task queue: eventfd write failed: %m");
        }
        if (q->have_timer)
                timer_delete(q->timer);
        q->exited = true;
        pthread_cond_broadcast(&q->exited_cond);
        pthread_mutex_unlock(&q->lock);
        return NULL;
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        TaskQueue *q = userdata;
        uint64_t n;
        Task *t;

        if (read(q->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                return log_error_errno(errno, "task queue: eventfd read failed: %m");
        for (;;) {
                pthread_mutex_lock(&q->lock);
                t = list_pop(&q->done);
                pthread_mutex_unlock(&q->lock);
                if (!t)
                        return 0;
                t->done(t, q->userdata);
        }
}

static int taskq_start(TaskQueue *q) {
        struct sigaction sa = { .sa_handler = on_signal };  /* no SA_RESTART */
        sigset_t ss, old;
        int r;

        (void) sigaction(TASKQ_SIGNAL, &sa, NULL);
        /* The loop's thread never takes the queue's signal; the thread starts
         * with everything blocked and then opens up to its own signal alone. */
        sigemptyset(&ss);
        sigaddset(&ss, TASKQ_SIGNAL);
        pthread_sigmask(SIG_BLOCK, &ss, NULL);
        sigfillset(&ss);
        pthread_sigmask(SIG_BLOCK, &ss, &old);
        r = -pthread_create(&q->thread, NULL, taskq_main, q);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        q->started = r == 0;
        return r;
}

static void taskq_freep(TaskQueue **q) {
        taskq_free(*q);
}

int taskq_new(sd_event *event, const char *name, size_t max, bool interrupt_at_stop, void *userdata,
              TaskQueue **ret) {
        _cleanup_(taskq_freep) TaskQueue *q = calloc(1, sizeof(TaskQueue));
        pthread_condattr_t attr;
        int r;

        if (!q)
                return -ENOMEM;
        q->max = max;
        q->interrupt_at_stop = interrupt_at_stop;
        snprintf(q->comm, sizeof(q->comm), "%s", name);        /* as ps -L shows the thread */
        q->userdata = userdata;
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->wake, NULL);
        /* The stop's wait is measured on the monotonic clock: a wall clock set back would stretch it. */
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&q->exited_cond, &attr);
        pthread_condattr_destroy(&attr);
        q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (q->efd < 0)
                return negative_errno();
        r = sd_event_add_io(event, &q->source, q->efd, EPOLLIN, on_done, q);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(q->source, name);
        r = taskq_start(q);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(q);
        return 0;
}

/*
 * Waits for the thread to end. A task inside the kernel in an uninterruptible
 * wait (writeback on a saturated device) cannot be made to return: past the
 * deadline taskq_stop() set it is abandoned, and so is the queue it uses (the
 * process is stopping; the kernel ends the thread with it). Returns false then.
 */
static bool join_in_time(TaskQueue *q) {
        struct timespec ts = timespec_from_usec(q->stop_deadline);
        bool exited;

        if (!q->interrupt_at_stop) {
                pthread_join(q->thread, NULL);
                return true;
        }
        pthread_mutex_lock(&q->lock);
        while (!q->exited && pthread_cond_timedwait(&q->exited_cond, &q->lock, &ts) != ETIMEDOUT)
                ;
        exited = q->exited;
        pthread_mutex_unlock(&q->lock);
        if (exited) {
                pthread_join(q->thread, NULL);  /* it has left its loop: this returns at once */
                return true;
        }
        log_warning("A blocking task did not return within %llums of the stop; it is abandoned",
                    (unsigned long long) (TASKQ_STOP_WAIT_USEC / USEC_PER_MSEC));
        return false;
}

void taskq_stop(TaskQueue *q) {
        if (!q || !q->started || __atomic_load_n(&q->stop, __ATOMIC_ACQUIRE))
                return;
        pthread_mutex_lock(&q->lock);
        q->stop_deadline = now_usec(CLOCK_MONOTONIC) + TASKQ_STOP_WAIT_USEC;
        __atomic_store_n(&q->stop, true, __ATOMIC_RELEASE);
        pthread_cond_signal(&q->wake);
        if (q->running && q->interrupt_at_stop)
                pthread_kill(q->thread, TASKQ_SIGNAL);
        pthread_mutex_unlock(&q->lock);
}

TaskQueue *taskq_free(TaskQueue *q) {
        if (!q)
                return NULL;
        if (q->started) {
                taskq_stop(q);
                if (!join_in_time(q))
                        return NULL;
        }
        list_drop(&q->queued, q->userdata);
        list_drop(&q->done, q->userdata);
        sd_event_source_disable_unref(q->source);
        closep(&q->efd);
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->wake);
        pthread_cond_destroy(&q->exited_cond);
        free(q);
        return NULL;
}

int taskq_submit(TaskQueue *q, Task *t) {
        pthread_mutex_lock(&q->lock);
        if (q->queued.n + q->done.n + (q->running ? 1 : 0) >= q->max) {
                pthread_mutex_unlock(&q->lock);
                return -EBUSY;
        }
        list_push(&q->queued, t);
        pthread_cond_signal(&q->wake);
        pthread_mutex_unlock(&q->lock);
        return 0;
}

size_t taskq_cancel(TaskQueue *q, bool (*match)(const Task *t, void *arg), void *arg) {
        size_t n = 0;

        pthread_mutex_lock(&q->lock);
        for (Task *t = q->queued.head; t; t = t->next)
                if (!taskq_cancelled(t) && match(t, arg)) {
                        __atomic_store_n(&t->cancelled, true, __ATOMIC_RELEASE);
                        n++;
                }
        if (q->running && !taskq_cancelled(q->running) && match(q->running, arg)) {
                __atomic_store_n(&q->running->cancelled, true, __ATOMIC_RELEASE);
                /* Under the lock: the thread cannot have moved on to another task. */
                interrupt_until_done(q);
                n++;
        }
        pthread_mutex_unlock(&q->lock);
        return n;
}

bool taskq_cancelled(const Task *t) {
        return __atomic_load_n(&t->cancelled, __ATOMIC_ACQUIRE);
}

size_t taskq_pending(TaskQueue *q) {
        size_t n;

        pthread_mutex_lock(&q->lock);
        n = q->queued.n + q->done.n + (q->running ? 1 : 0);
        pthread_mutex_unlock(&q->lock);
        return n;
}

const Task *taskq_running(TaskQueue *q) {
        const Task *t;

        pthread_mutex_lock(&q->lock);
        t = q->running;
        pthread_mutex_unlock(&q->lock);
        return t;
}

bool taskq_stopping(void) {
        return current_queue && __atomic_load_n(&current_queue->stop, __ATOMIC_ACQUIRE);
}
