/* Event loop: timer order and cancellation, fd watches, cross-thread posts, "nothing left
 * behind" accounting; its id map keyed by names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/idmap.h"
#include "io/loop.h"

typedef struct order_log {
    int seen[16];
    int n;
} order_log;

typedef struct order_item {
    order_log *log;
    int tag;
} order_item;

static void log_tag(void *ud)
{
    order_item *it = ud;
    it->log->seen[it->log->n++] = it->tag;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void timers_fire_in_deadline_then_creation_order(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    assert_non_null(loop);
    order_log log = {{0}, 0};
    /* tag = expected position */
    order_item items[] = {{&log, 4}, {&log, 1}, {&log, 2}, {&log, 0}, {&log, 3}};
    /* deadlines 100 ms apart: a timer's deadline is taken from a fresh clock when it is
     * armed, so a slow machine (valgrind) must not reorder them while they are armed; armed
     * again when arming them took 50 ms or more (the process waited for a CPU meanwhile: the
     * deadlines are then not the ones the order below is of) */
    int64_t delays[] = {400, 100, 100, 0, 250};
    uint64_t ids[5];
    for (int attempt = 0; attempt < 20; attempt++) {
        int64_t armed = mono_ms();
        for (int i = 0; i < 5; i++)
            assert_int_not_equal(ids[i] = ac_loop_timer(loop, delays[i], log_tag, &items[i]), 0);
        if (mono_ms() - armed < 50)
            break;
        for (int i = 0; i < 5; i++)
            assert_int_equal(ac_loop_cancel_timer(loop, ids[i]), 1);
    }
    assert_int_equal(ac_loop_pending(loop), 5);
    int64_t t0 = ac_loop_now_ms(loop);
    ac_loop_run(loop);
    assert_int_equal(log.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(log.seen[i], i);
    assert_true(ac_loop_now_ms(loop) - t0 >= 400);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

typedef struct cancel_ctx {
    ac_loop *loop;
    uint64_t victim;
    int victim_ran;
    int cancel_rc;
    uint64_t self;
    int self_cancel_rc;
} cancel_ctx;

static void victim_fn(void *ud)
{
    ((cancel_ctx *)ud)->victim_ran++;
}

static void canceller_fn(void *ud)
{
    cancel_ctx *c = ud;
    c->cancel_rc = ac_loop_cancel_timer(c->loop, c->victim);
    c->self_cancel_rc = ac_loop_cancel_timer(c->loop, c->self); /* already fired */
}

static void cancel_is_exact_and_idempotent(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    cancel_ctx c = {.loop = loop};
    uint64_t a = ac_loop_timer(loop, 5, victim_fn, &c);
    assert_int_equal(ac_loop_cancel_timer(loop, a), 1);
    assert_int_equal(ac_loop_cancel_timer(loop, a), 0);
    assert_int_equal(ac_loop_cancel_timer(loop, 0), 0);
    assert_int_equal(ac_loop_cancel_timer(loop, 987654), 0);

    /* Both due in the same iteration; the first cancels the second. */
    c.self = ac_loop_timer(loop, 0, canceller_fn, &c);
    c.victim = ac_loop_timer(loop, 0, victim_fn, &c);
    ac_loop_run(loop);
    assert_int_equal(c.cancel_rc, 1);
    assert_int_equal(c.self_cancel_rc, 0);
    assert_int_equal(c.victim_ran, 0);
    /* Cancelling a fired id later is still a no-op. */
    assert_int_equal(ac_loop_cancel_timer(loop, c.self), 0);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

typedef struct rearm_ctx {
    ac_loop *loop;
    int count;
} rearm_ctx;

static void rearm_fn(void *ud)
{
    rearm_ctx *r = ud;
    if (++r->count < 5)
        ac_loop_timer(r->loop, 0, rearm_fn, r);
}

static void zero_timer_rearming_itself_does_not_starve(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    rearm_ctx r = {loop, 0};
    ac_loop_timer(loop, 0, rearm_fn, &r);
    /* One firing per iteration: each run_once returns after running one timer. */
    for (int i = 1; i <= 5; i++) {
        assert_int_equal(ac_loop_run_once(loop, 1000), 1);
        assert_int_equal(r.count, i);
    }
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

typedef struct pipe_ctx {
    ac_loop *loop;
    uint64_t self;
    uint64_t other;
    char got[16];
    int reads;
    int other_ran;
} pipe_ctx;

static void read_and_unwatch_other(void *ud, int fd, int revents)
{
    pipe_ctx *p = ud;
    assert_true(revents & AC_LOOP_READ);
    ssize_t n = read(fd, p->got, sizeof p->got - 1);
    assert_true(n > 0);
    p->got[n] = '\0';
    p->reads++;
    ac_loop_unwatch(p->loop, p->self);
    ac_loop_unwatch(p->loop, p->other);
}

static void other_fn(void *ud, int fd, int revents)
{
    (void)fd;
    (void)revents;
    ((pipe_ctx *)ud)->other_ran++;
}

static void fd_watch_reads_and_unwatch_is_safe_mid_dispatch(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    int p1[2], p2[2];
    assert_int_equal(pipe(p1), 0);
    assert_int_equal(pipe(p2), 0);
    pipe_ctx c = {.loop = loop};
    c.self = ac_loop_watch_fd(loop, p1[0], AC_LOOP_READ, read_and_unwatch_other, &c);
    c.other = ac_loop_watch_fd(loop, p2[0], AC_LOOP_READ, other_fn, &c);
    assert_int_equal(ac_loop_pending(loop), 2);
    /* Nothing ready: a short run_once does nothing. */
    assert_int_equal(ac_loop_run_once(loop, 10), 0);
    assert_int_equal(write(p1[1], "ping", 4), 4);
    assert_int_equal(write(p2[1], "x", 1), 1);
    ac_loop_run(loop);
    assert_string_equal(c.got, "ping");
    assert_int_equal(c.reads, 1);
    assert_int_equal(c.other_ran, 0);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_unwatch(loop, c.self); /* stale id: no-op */
    close(p1[0]);
    close(p1[1]);
    close(p2[0]);
    close(p2[1]);
    ac_loop_free(loop);
}

typedef struct write_ctx {
    ac_loop *loop;
    uint64_t id;
    int events;
} write_ctx;

static void writable_fn(void *ud, int fd, int revents)
{
    (void)fd;
    write_ctx *w = ud;
    w->events = revents;
    ac_loop_unwatch(w->loop, w->id);
}

static void write_watch_and_hangup(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    int p[2];
    assert_int_equal(pipe(p), 0);
    write_ctx w = {loop, 0, 0};
    w.id = ac_loop_watch_fd(loop, p[1], AC_LOOP_WRITE, writable_fn, &w);
    ac_loop_run(loop);
    assert_true(w.events & AC_LOOP_WRITE);
    assert_false(w.events & AC_LOOP_READ);

    /* Writer closed: the reader sees READ (EOF) on hang-up. */
    close(p[1]);
    w.events = 0;
    w.id = ac_loop_watch_fd(loop, p[0], AC_LOOP_READ, writable_fn, &w);
    ac_loop_run(loop);
    assert_true(w.events & AC_LOOP_READ);
    close(p[0]);

    assert_int_equal(ac_loop_watch_fd(loop, -1, AC_LOOP_READ, writable_fn, &w), 0);
    assert_int_equal(ac_loop_watch_events(loop, 12345, AC_LOOP_READ), -1);
    ac_loop_free(loop);
}

#define POSTS 2000

typedef struct post_ctx {
    ac_loop *loop;
    int count;
    int in_order;
    pthread_t loop_thread;
} post_ctx;

typedef struct post_item {
    post_ctx *ctx;
    int seq;
} post_item;

static post_item items_store[POSTS];

static void post_fn(void *ud)
{
    post_item *it = ud;
    post_ctx *c = it->ctx;
    if (it->seq != c->count || !pthread_equal(pthread_self(), c->loop_thread))
        c->in_order = 0;
    if (++c->count == POSTS)
        ac_loop_stop(c->loop);
}

static void *poster(void *arg)
{
    post_ctx *c = arg;
    usleep(20 * 1000); /* let the loop block in poll first */
    for (int i = 0; i < POSTS; i++) {
        items_store[i].ctx = c;
        items_store[i].seq = i;
        if (ac_loop_post(c->loop, post_fn, &items_store[i]) != 0)
            return (void *)1;
    }
    return NULL;
}

static void noop(void *ud)
{
    (void)ud;
}

static void post_from_another_thread_runs_on_loop_in_order(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    post_ctx c = {loop, 0, 1, pthread_self()};
    /* A long timer keeps the loop blocked in poll: only the posts' wakeup ends the run. */
    uint64_t guard = ac_loop_timer(loop, 20000, noop, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, poster, &c), 0);
    int64_t t0 = ac_loop_now_ms(loop);
    ac_loop_run(loop);
    void *rc;
    pthread_join(t, &rc);
    assert_null(rc);
    assert_int_equal(c.count, POSTS);
    assert_true(c.in_order);
    /* Woken by the posts, not by the guard timer. */
    assert_true(ac_loop_now_ms(loop) - t0 < 20000);
    assert_int_equal(ac_loop_cancel_timer(loop, guard), 1);
    ac_loop_free(loop);
}

static void post_then_run_with_nothing_registered(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    post_item it;
    post_ctx c = {loop, 0, 1, pthread_self()};
    it.ctx = &c;
    it.seq = 0;
    assert_int_equal(ac_loop_post(loop, post_fn, &it), 0);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_run(loop); /* a queued post alone keeps run going */
    assert_int_equal(c.count, 1);
    ac_loop_run(loop); /* nothing left: returns at once */
    ac_loop_free(loop);
}

typedef struct clock_ctx {
    ac_loop *loop;
    int64_t a, b;
} clock_ctx;

static void read_clock_twice(void *ud)
{
    clock_ctx *c = ud;
    c->a = ac_loop_now_ms(c->loop);
    usleep(5000);
    c->b = ac_loop_now_ms(c->loop);
}

static void clocks_cached_per_iteration_and_wall_is_epoch(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    clock_ctx c = {loop, 0, 0};
    ac_loop_timer(loop, 0, read_clock_twice, &c);
    ac_loop_run(loop);
    assert_true(c.a == c.b);
    assert_true(ac_wall_now_ms() > INT64_C(1577836800000)); /* after 2020-01-01 */
    ac_loop_free(loop);
}

static void stop_fn(void *ud)
{
    ac_loop_stop(ud);
}

static void stop_ends_run_and_free_releases_everything(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    int p[2];
    assert_int_equal(pipe(p), 0);
    ac_loop_watch_fd(loop, p[0], AC_LOOP_READ, other_fn, NULL);
    for (int i = 0; i < 100; i++)
        ac_loop_timer(loop, 60000 + i, noop, NULL);
    ac_loop_timer(loop, INT64_MAX, noop, NULL); /* "never": must not overflow */
    ac_loop_timer(loop, 1, stop_fn, loop);
    ac_loop_run(loop);
    assert_int_equal(ac_loop_pending(loop), 102);
    ac_loop_post(loop, noop, NULL);
    ac_loop_free(loop); /* sanitizers check nothing leaks */
    ac_loop_free(NULL);
    close(p[0]);
    close(p[1]);
}

typedef struct heap_item {
    int64_t earliest;
    int fired;
} heap_item;

static void heap_fn(void *ud)
{
    heap_item *it = ud;
    it->fired++;
    if (mono_ms() < it->earliest)
        fail_msg("timer fired %lld ms early", (long long)(it->earliest - mono_ms()));
}

static void many_timers_with_random_cancels_fire_once_never_early(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    static heap_item items[500];
    uint64_t ids[500];
    unsigned seed = 12345;
    for (int i = 0; i < 500; i++) {
        seed = seed * 1103515245u + 12345u;
        int d = (int)((seed >> 16) % 50);
        items[i].earliest = mono_ms() + d;
        items[i].fired = 0;
        ids[i] = ac_loop_timer(loop, d, heap_fn, &items[i]);
    }
    int cancelled = 0;
    for (int i = 0; i < 500; i += 3)
        cancelled += ac_loop_cancel_timer(loop, ids[i]);
    assert_int_equal(cancelled, 167);
    assert_int_equal(ac_loop_pending(loop), 500 - (size_t)cancelled);
    ac_loop_run(loop);
    for (int i = 0; i < 500; i++)
        assert_int_equal(items[i].fired, i % 3 == 0 ? 0 : 1);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

/* The id map keyed by names: a name's key is never 0 and the same for the same text; room
 * reserved ahead is not grown into by the puts it was reserved for; a replaced value keeps
 * the count. */
static void idmap_names_and_reserve(void **state)
{
    (void)state;
    ac_idmap m = {0};
    assert_int_not_equal(ac_idmap_str_key(""), 0);
    assert_true(ac_idmap_str_key("tool::a") == ac_idmap_str_key("tool::a"));
    assert_true(ac_idmap_str_key("tool::a") != ac_idmap_str_key("tool::b"));
    assert_int_equal(ac_idmap_reserve(&m, 1000), 0);
    size_t cap = m.cap;
    assert_true(cap * 3 >= 1000 * 4);
    static int vals[1000];
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(ac_idmap_put(&m, ac_idmap_str_key(name), &vals[i]), 0);
    }
    assert_int_equal(m.cap, cap);
    assert_int_equal(m.len, 1000);
    assert_ptr_equal(ac_idmap_get(&m, ac_idmap_str_key("t737")), &vals[737]);
    assert_int_equal(ac_idmap_put(&m, ac_idmap_str_key("t737"), &vals[0]), 0);
    assert_int_equal(m.len, 1000);
    assert_ptr_equal(ac_idmap_get(&m, ac_idmap_str_key("t737")), &vals[0]);
    assert_null(ac_idmap_get(&m, ac_idmap_str_key("t1000")));
    ac_idmap_clear(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(timers_fire_in_deadline_then_creation_order),
        cmocka_unit_test(cancel_is_exact_and_idempotent),
        cmocka_unit_test(zero_timer_rearming_itself_does_not_starve),
        cmocka_unit_test(fd_watch_reads_and_unwatch_is_safe_mid_dispatch),
        cmocka_unit_test(write_watch_and_hangup),
        cmocka_unit_test(post_from_another_thread_runs_on_loop_in_order),
        cmocka_unit_test(post_then_run_with_nothing_registered),
        cmocka_unit_test(clocks_cached_per_iteration_and_wall_is_epoch),
        cmocka_unit_test(stop_ends_run_and_free_releases_everything),
        cmocka_unit_test(many_timers_with_random_cancels_fire_once_never_early),
        cmocka_unit_test(idmap_names_and_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
