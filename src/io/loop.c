/* The event loop: timers in a binary heap, fd watches polled with poll(2), a mutex-protected
 * post queue woken through a self-pipe. Handles are ids looked up in hash maps, so a stale id
 * finds nothing instead of a freed pointer. */
#include "io/loop_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/grow.h"

typedef struct ac_timer {
    uint64_t id;
    int64_t deadline;
    size_t heap_index;
    ac_loop_fn fn;
    void *ud;
    unsigned flags;
} ac_timer;

typedef struct ac_watch {
    uint64_t id;
    int fd;
    int events;
    int dead; /* unwatched; freed when the watch vector is next compacted */
    ac_loop_fd_fn fn;
    void *ud;
    unsigned flags;
} ac_watch;

typedef struct ac_post {
    ac_loop_fn fn;
    void *ud;
} ac_post;

struct ac_loop {
    uint64_t next_id;
    int64_t now_ms;
    int stop;

    ac_idmap timers; /* id -> ac_timer* */
    ac_timer **heap; /* min-heap on (deadline, id) */
    size_t heap_len, heap_cap;
    size_t user_timers;
    /* freed timers kept for the next ones (a model call arms a few) */
    ac_timer *spare[32];
    size_t n_spare;

    ac_idmap watches; /* id -> ac_watch* (live ones only) */
    ac_watch **wv;    /* live and dead watches, in creation order */
    size_t wv_len, wv_cap;
    size_t user_watches;
    struct pollfd *pfd;
    uint64_t *pfd_id;
    size_t pfd_cap;

    pthread_mutex_t post_mu;
    ac_post *posts; /* guarded by post_mu */
    size_t posts_len, posts_cap;
    ac_post *running_posts; /* owned by the loop thread */
    size_t running_cap;
    int wake_r, wake_w;
    uint64_t wake_watch;

    ac_loop_task *defer_head, *defer_tail; /* deferred tasks, FIFO */
    int depth;                             /* callbacks (and deferred tasks) on the stack */

    struct {
        const ac_loop_client_ops *ops;
        void *state;
    } clients[AC_LOOP_MAX_CLIENTS]; /* in the order attached */
    size_t n_clients;
};

/* ---- clocks ---------------------------------------------------------------------------- */

int64_t ac_loop_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ac_wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ac_loop_now_ms(ac_loop *loop)
{
    return loop->now_ms;
}

uint64_t ac_loop_next_id(ac_loop *loop)
{
    return ++loop->next_id;
}

/* ---- clients --------------------------------------------------------------------------- */

int ac_loop_attach(ac_loop *loop, const ac_loop_client_ops *ops, void *state)
{
    if (!ops || ac_loop_client(loop, ops) || loop->n_clients == AC_LOOP_MAX_CLIENTS)
        return -1;
    loop->clients[loop->n_clients].ops = ops;
    loop->clients[loop->n_clients].state = state;
    loop->n_clients++;
    return 0;
}

void *ac_loop_client(ac_loop *loop, const ac_loop_client_ops *ops)
{
    for (size_t i = 0; i < loop->n_clients; i++)
        if (loop->clients[i].ops == ops)
            return loop->clients[i].state;
    return NULL;
}

/* ---- timers ---------------------------------------------------------------------------- */

static int timer_before(const ac_timer *a, const ac_timer *b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->id < b->id);
}

static void heap_set(ac_loop *loop, size_t i, ac_timer *t)
{
    loop->heap[i] = t;
    t->heap_index = i;
}

static void heap_up(ac_loop *loop, size_t i)
{
    ac_timer *t = loop->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!timer_before(t, loop->heap[parent]))
            break;
        heap_set(loop, i, loop->heap[parent]);
        i = parent;
    }
    heap_set(loop, i, t);
}

static void heap_down(ac_loop *loop, size_t i)
{
    ac_timer *t = loop->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const ac_timer *best = t;
        if (l < loop->heap_len && timer_before(loop->heap[l], best)) {
            m = l;
            best = loop->heap[l];
        }
        if (r < loop->heap_len && timer_before(loop->heap[r], best))
            m = r;
        if (m == i)
            break;
        heap_set(loop, i, loop->heap[m]);
        i = m;
    }
    heap_set(loop, i, t);
}

static void heap_remove(ac_loop *loop, ac_timer *t)
{
    size_t i = t->heap_index;
    ac_timer *last = loop->heap[--loop->heap_len];
    if (last == t)
        return;
    heap_set(loop, i, last);
    heap_up(loop, i);
    heap_down(loop, last->heap_index);
}

/* A timer's memory back to the spares, or freed when they are full. */
static void timer_release(ac_loop *loop, ac_timer *t)
{
    if (loop->n_spare < sizeof loop->spare / sizeof loop->spare[0])
        loop->spare[loop->n_spare++] = t;
    else
        free(t);
}

uint64_t ac_loop_timer_ex(ac_loop *loop, int64_t delay_ms, ac_loop_fn fn, void *ud, unsigned flags)
{
    if (!fn)
        return 0;
    if (ac_grow((void **)&loop->heap, &loop->heap_cap, loop->heap_len + 1, sizeof *loop->heap))
        return 0;
    ac_timer *t = loop->n_spare ? loop->spare[--loop->n_spare] : malloc(sizeof *t);
    if (!t)
        return 0;
    memset(t, 0, sizeof *t);
    t->id = ac_loop_next_id(loop);
    /* Fresh clock, not the cached one: a timer armed after a long callback must not fire
     * early. */
    if (delay_ms < 0)
        delay_ms = 0;
    if (delay_ms > INT64_MAX / 4) /* "never", without overflowing the deadline */
        delay_ms = INT64_MAX / 4;
    t->deadline = ac_loop_clock_ms() + delay_ms;
    t->fn = fn;
    t->ud = ud;
    t->flags = flags;
    if (ac_idmap_put(&loop->timers, t->id, t) != 0) {
        timer_release(loop, t);
        return 0;
    }
    loop->heap[loop->heap_len] = t;
    t->heap_index = loop->heap_len++;
    heap_up(loop, t->heap_index);
    if (!(flags & AC_LOOP_INTERNAL))
        loop->user_timers++;
    return t->id;
}

uint64_t ac_loop_timer(ac_loop *loop, int64_t delay_ms, ac_loop_fn fn, void *ud)
{
    return ac_loop_timer_ex(loop, delay_ms, fn, ud, 0);
}

/* Unlinks a timer; the caller frees it. */
static void timer_unlink(ac_loop *loop, ac_timer *t)
{
    ac_idmap_del(&loop->timers, t->id);
    heap_remove(loop, t);
    if (!(t->flags & AC_LOOP_INTERNAL))
        loop->user_timers--;
}

int ac_loop_cancel_timer(ac_loop *loop, uint64_t id)
{
    ac_timer *t = ac_idmap_get(&loop->timers, id);
    if (!t)
        return 0;
    timer_unlink(loop, t);
    timer_release(loop, t);
    return 1;
}

/* ---- fd watches ------------------------------------------------------------------------ */

uint64_t ac_loop_watch_fd_ex(ac_loop *loop, int fd, int events, ac_loop_fd_fn fn, void *ud,
                             unsigned flags)
{
    if (fd < 0 || !fn)
        return 0;
    if (ac_grow((void **)&loop->wv, &loop->wv_cap, loop->wv_len + 1, sizeof *loop->wv))
        return 0;
    ac_watch *w = calloc(1, sizeof *w);
    if (!w)
        return 0;
    w->id = ac_loop_next_id(loop);
    w->fd = fd;
    w->events = events & (AC_LOOP_READ | AC_LOOP_WRITE);
    w->fn = fn;
    w->ud = ud;
    w->flags = flags;
    if (ac_idmap_put(&loop->watches, w->id, w) != 0) {
        free(w);
        return 0;
    }
    loop->wv[loop->wv_len++] = w;
    if (!(flags & AC_LOOP_INTERNAL))
        loop->user_watches++;
    return w->id;
}

uint64_t ac_loop_watch_fd(ac_loop *loop, int fd, int events, ac_loop_fd_fn fn, void *ud)
{
    return ac_loop_watch_fd_ex(loop, fd, events, fn, ud, 0);
}

int ac_loop_watch_events(ac_loop *loop, uint64_t id, int events)
{
    ac_watch *w = ac_idmap_get(&loop->watches, id);
    if (!w)
        return -1;
    w->events = events & (AC_LOOP_READ | AC_LOOP_WRITE);
    return 0;
}

void ac_loop_unwatch(ac_loop *loop, uint64_t id)
{
    ac_watch *w = ac_idmap_del(&loop->watches, id);
    if (!w)
        return;
    /* The vector may be being walked by the dispatcher: mark now, free on compaction. */
    w->dead = 1;
    if (!(w->flags & AC_LOOP_INTERNAL))
        loop->user_watches--;
}

static void watches_compact(ac_loop *loop)
{
    size_t j = 0;
    for (size_t i = 0; i < loop->wv_len; i++) {
        if (loop->wv[i]->dead)
            free(loop->wv[i]);
        else
            loop->wv[j++] = loop->wv[i];
    }
    loop->wv_len = j;
}

/* ---- deferred tasks ------------------------------------------------------------------- */

void ac_loop_defer(ac_loop *loop, ac_loop_task *task)
{
    if (task->queued)
        return;
    task->queued = 1;
    task->next = NULL;
    if (loop->defer_tail)
        loop->defer_tail->next = task;
    else
        loop->defer_head = task;
    loop->defer_tail = task;
}

void ac_loop_undefer(ac_loop *loop, ac_loop_task *task)
{
    if (!task->queued)
        return;
    ac_loop_task *prev = NULL;
    for (ac_loop_task *t = loop->defer_head; t; prev = t, t = t->next)
        if (t == task) {
            if (prev)
                prev->next = t->next;
            else
                loop->defer_head = t->next;
            if (loop->defer_tail == t)
                loop->defer_tail = prev;
            break;
        }
    task->queued = 0;
    task->next = NULL;
}

/* Runs every deferred task, including those the tasks defer themselves. */
static void run_deferred(ac_loop *loop)
{
    ac_loop_task *t;
    loop->depth++;
    while ((t = loop->defer_head) != NULL) {
        loop->defer_head = t->next;
        if (!loop->defer_head)
            loop->defer_tail = NULL;
        t->next = NULL;
        t->queued = 0;
        t->fn(t->ud);
    }
    loop->depth--;
}

int ac_loop_in_callback(const ac_loop *loop)
{
    return loop->depth > 0;
}

/* ---- posts ----------------------------------------------------------------------------- */

static void wake_drain(void *ud, int fd, int revents)
{
    (void)ud;
    (void)revents;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

int ac_loop_post(ac_loop *loop, ac_loop_fn fn, void *ud)
{
    if (!fn)
        return -1;
    pthread_mutex_lock(&loop->post_mu);
    if (ac_grow((void **)&loop->posts, &loop->posts_cap, loop->posts_len + 1,
                sizeof *loop->posts)) {
        pthread_mutex_unlock(&loop->post_mu);
        return -1;
    }
    loop->posts[loop->posts_len].fn = fn;
    loop->posts[loop->posts_len].ud = ud;
    int first = ++loop->posts_len == 1;
    pthread_mutex_unlock(&loop->post_mu);
    /* One byte per empty->non-empty change is enough: the loop takes the whole queue. A full
     * pipe (EAGAIN) already means a wakeup is pending. */
    if (first) {
        char c = 1;
        ssize_t n;
        do
            n = write(loop->wake_w, &c, 1);
        while (n < 0 && errno == EINTR);
    }
    return 0;
}

static int posts_queued(ac_loop *loop)
{
    pthread_mutex_lock(&loop->post_mu);
    int n = loop->posts_len > 0;
    pthread_mutex_unlock(&loop->post_mu);
    return n;
}

static int run_posts(ac_loop *loop)
{
    pthread_mutex_lock(&loop->post_mu);
    /* Swap buffers so posts queued by the callbacks below wait for the next iteration. */
    ac_post *batch = loop->posts;
    size_t n = loop->posts_len, batch_cap = loop->posts_cap;
    loop->posts = loop->running_posts;
    loop->posts_cap = loop->running_cap;
    loop->posts_len = 0;
    loop->running_posts = batch;
    loop->running_cap = batch_cap;
    pthread_mutex_unlock(&loop->post_mu);
    for (size_t i = 0; i < n; i++) {
        loop->depth++;
        batch[i].fn(batch[i].ud);
        loop->depth--;
        run_deferred(loop);
    }
    return (int)n;
}

/* ---- lifecycle ------------------------------------------------------------------------- */

ac_loop *ac_loop_new(void)
{
    ac_loop *loop = calloc(1, sizeof *loop);
    int fds[2] = {-1, -1};
    if (!loop)
        return NULL;
    loop->wake_r = loop->wake_w = -1;
    if (pthread_mutex_init(&loop->post_mu, NULL) != 0) {
        free(loop);
        return NULL;
    }
    if (pipe(fds) != 0)
        goto fail;
    loop->wake_r = fds[0];
    loop->wake_w = fds[1];
    for (int i = 0; i < 2; i++) {
        if (fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0 ||
            fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK) != 0)
            goto fail;
    }
    loop->wake_watch =
        ac_loop_watch_fd_ex(loop, loop->wake_r, AC_LOOP_READ, wake_drain, loop, AC_LOOP_INTERNAL);
    if (!loop->wake_watch)
        goto fail;
    loop->now_ms = ac_loop_clock_ms();
    return loop;
fail:
    ac_loop_free(loop);
    return NULL;
}

void ac_loop_free(ac_loop *loop)
{
    if (!loop)
        return;
    /* Clients first: they still use timers and watches while tearing down. */
    while (loop->n_clients > 0) {
        size_t last = loop->n_clients - 1;
        loop->clients[last].ops->teardown(loop, loop->clients[last].state);
        loop->n_clients = last;
    }
    for (size_t i = 0; i < loop->heap_len; i++)
        free(loop->heap[i]);
    free(loop->heap);
    while (loop->n_spare)
        free(loop->spare[--loop->n_spare]);
    ac_idmap_clear(&loop->timers);
    for (size_t i = 0; i < loop->wv_len; i++)
        free(loop->wv[i]);
    free(loop->wv);
    ac_idmap_clear(&loop->watches);
    free(loop->pfd);
    free(loop->pfd_id);
    free(loop->posts);
    free(loop->running_posts);
    if (loop->wake_r >= 0)
        close(loop->wake_r);
    if (loop->wake_w >= 0)
        close(loop->wake_w);
    pthread_mutex_destroy(&loop->post_mu);
    free(loop);
}

/* ---- iteration ------------------------------------------------------------------------- */

static int run_timers(ac_loop *loop)
{
    /* Only timers that existed when this phase began may fire now. */
    uint64_t last_id = loop->next_id;
    int ran = 0;
    while (loop->heap_len > 0) {
        ac_timer *t = loop->heap[0];
        if (t->deadline > loop->now_ms)
            break;
        /* A timer armed during this phase has deadline >= now_ms and a larger id than every
         * older one, so all older due timers sit before it in (deadline, id) order. */
        if (t->id > last_id)
            break;
        timer_unlink(loop, t);
        ac_loop_fn fn = t->fn;
        void *ud = t->ud;
        timer_release(loop, t);
        loop->depth++;
        fn(ud);
        loop->depth--;
        run_deferred(loop);
        ran++;
    }
    return ran;
}

static int build_pollfds(ac_loop *loop, size_t *count)
{
    watches_compact(loop);
    if (loop->pfd_cap < loop->wv_len) {
        size_t ncap = loop->wv_len * 2;
        struct pollfd *np = realloc(loop->pfd, ncap * sizeof *np);
        if (!np)
            return -1;
        loop->pfd = np;
        uint64_t *ni = realloc(loop->pfd_id, ncap * sizeof *ni);
        if (!ni)
            return -1;
        loop->pfd_id = ni;
        loop->pfd_cap = ncap;
    }
    size_t n = 0;
    for (size_t i = 0; i < loop->wv_len; i++) {
        ac_watch *w = loop->wv[i];
        loop->pfd[n].fd = w->fd;
        loop->pfd[n].events = (short)(((w->events & AC_LOOP_READ) ? POLLIN : 0) |
                                      ((w->events & AC_LOOP_WRITE) ? POLLOUT : 0));
        loop->pfd[n].revents = 0;
        loop->pfd_id[n] = w->id;
        n++;
    }
    *count = n;
    return 0;
}

int ac_loop_run_once(ac_loop *loop, int timeout_ms)
{
    if (!loop)
        return -1;
    size_t nfds = 0;
    int ran = 0;
    loop->now_ms = ac_loop_clock_ms();
    if (loop->defer_head) { /* deferred outside any callback */
        run_deferred(loop);
        timeout_ms = 0;
    }
    if (build_pollfds(loop, &nfds) != 0)
        return -1;

    int64_t wait = timeout_ms < 0 ? -1 : timeout_ms;
    if (loop->heap_len > 0) {
        int64_t until = loop->heap[0]->deadline - loop->now_ms;
        if (until < 0)
            until = 0;
        if (wait < 0 || until < wait)
            wait = until;
    }
    if (wait != 0 && posts_queued(loop))
        wait = 0;
    if (wait > 24 * 3600 * 1000)
        wait = 24 * 3600 * 1000;

    int rc = poll(loop->pfd, (nfds_t)nfds, (int)wait);
    if (rc < 0 && errno != EINTR)
        return -1;
    loop->now_ms = ac_loop_clock_ms();

    for (size_t i = 0; rc > 0 && i < nfds; i++) {
        short re = loop->pfd[i].revents;
        if (re == 0)
            continue;
        /* Looked up again: an earlier callback may have unwatched it. */
        ac_watch *w = ac_idmap_get(&loop->watches, loop->pfd_id[i]);
        if (!w)
            continue;
        int ev = 0;
        if (re & (POLLIN | POLLHUP))
            ev |= AC_LOOP_READ;
        if (re & POLLOUT)
            ev |= AC_LOOP_WRITE;
        if (re & (POLLERR | POLLHUP | POLLNVAL))
            ev |= AC_LOOP_ERROR;
        /* Report only what the watcher asked for, plus errors. */
        ev &= w->events | AC_LOOP_ERROR;
        if (ev == 0)
            continue;
        loop->depth++;
        w->fn(w->ud, w->fd, ev);
        loop->depth--;
        run_deferred(loop);
        ran++;
    }
    ran += run_timers(loop);
    ran += run_posts(loop);
    return ran;
}

size_t ac_loop_pending(ac_loop *loop)
{
    size_t n = loop->user_timers + loop->user_watches;
    for (size_t i = 0; i < loop->n_clients; i++)
        n += loop->clients[i].ops->active(loop->clients[i].state);
    return n;
}

void ac_loop_stop(ac_loop *loop)
{
    if (loop)
        loop->stop = 1;
}

void ac_loop_run(ac_loop *loop)
{
    if (!loop)
        return;
    loop->stop = 0;
    while (!loop->stop && (ac_loop_pending(loop) > 0 || posts_queued(loop) || loop->defer_head)) {
        if (ac_loop_run_once(loop, -1) < 0)
            break;
    }
}
