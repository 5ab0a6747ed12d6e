/* libcurl multi driven by the event loop: curl tells us which sockets to watch and when to
 * wake it (socket and timer callbacks); the loop calls curl_multi_socket_action() back when a
 * socket is ready or the timer expires, then collects finished transfers. */
#include "io/http.h"
#include "io/loop_int.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct ac_xfer {
    uint64_t id;
    CURL *easy;
    ac_http_done_fn done;
    void *ud;
    struct ac_http_state *st;
    /* stall detection */
    int64_t stall_ms;
    uint64_t stall_timer;
    curl_off_t seen_bytes;
    int64_t last_progress_ms;
    int reported; /* progress is what ac_http_progress() reports, not bytes moved */
} ac_xfer;

/* One per socket curl asked us to watch; key in socks is fd + 1. */
typedef struct ac_sock {
    int fd;
    uint64_t watch;
} ac_sock;

struct ac_http_state {
    CURLM *multi;
    ac_idmap by_id;   /* transfer id -> ac_xfer* */
    ac_idmap by_easy; /* (uintptr_t)easy -> ac_xfer* */
    ac_idmap socks;   /* fd + 1 -> ac_sock* */
    uint64_t timer;   /* internal loop timer standing for curl's single timeout */
    int tearing_down;
    int in_curl;   /* inside curl_multi_socket_action(): curl forbids removing handles */
    ac_loop *loop;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ac_http_global_init(void)
{
    pthread_once(&global_once, global_init_once);
    return global_rc == CURLE_OK ? 0 : -1;
}

/* Unlinks a transfer from the multi and the maps; the caller frees it. Not from inside curl. */
static void xfer_unlink(struct ac_http_state *st, ac_xfer *x)
{
    ac_idmap_del(&st->by_id, x->id);
    ac_idmap_del(&st->by_easy, (uint64_t)(uintptr_t)x->easy);
    curl_multi_remove_handle(st->multi, x->easy);
    if (x->stall_timer)
        ac_loop_cancel_timer(st->loop, x->stall_timer);
    x->stall_timer = 0;
}

static curl_off_t bytes_moved(CURL *easy)
{
    curl_off_t down = 0, up = 0;
    long head = 0;
    curl_easy_getinfo(easy, CURLINFO_SIZE_DOWNLOAD_T, &down);
    curl_easy_getinfo(easy, CURLINFO_SIZE_UPLOAD_T, &up);
    curl_easy_getinfo(easy, CURLINFO_HEADER_SIZE, &head);
    return down + up + head;
}

static void on_stall_check(void *ud);

static int arm_stall_check(ac_xfer *x)
{
    int64_t every = x->stall_ms / 4 < 10 ? 10 : x->stall_ms / 4;
    x->stall_timer = ac_loop_timer_ex(x->st->loop, every, on_stall_check, x, AC_LOOP_INTERNAL);
    return x->stall_timer ? 0 : -1;
}

static void on_stall_check(void *ud)
{
    ac_xfer *x = ud; /* still alive: unlinking a transfer cancels this timer */
    struct ac_http_state *st = x->st;
    x->stall_timer = 0;
    int64_t now = ac_loop_now_ms(st->loop);
    curl_off_t moved = x->reported ? x->seen_bytes : bytes_moved(x->easy);
    if (moved != x->seen_bytes) {
        x->seen_bytes = moved;
        x->last_progress_ms = now;
    } else if (now - x->last_progress_ms >= x->stall_ms) {
        xfer_unlink(st, x);
        ac_http_done_fn done = x->done;
        void *xud = x->ud;
        CURL *easy = x->easy;
        free(x);
        if (done)
            done(xud, easy, CURLE_OPERATION_TIMEDOUT);
        return;
    }
    arm_stall_check(x); /* out of memory: the check stops, the transfer goes on */
}

static void check_done(struct ac_http_state *st)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(st->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode rc = msg->data.result;
        ac_xfer *x = ac_idmap_get(&st->by_easy, (uint64_t)(uintptr_t)easy);
        if (!x) {
            curl_multi_remove_handle(st->multi, easy);
            continue;
        }
        xfer_unlink(st, x);
        ac_http_done_fn done = x->done;
        void *ud = x->ud;
        free(x);
        /* May start or cancel transfers: we are outside curl here, and msg is not used
         * again. */
        if (done)
            done(ud, easy, rc);
    }
}

/* curl_multi_socket_action(), then the transfers it finished. */
static void socket_action(struct ac_http_state *st, curl_socket_t fd, int mask)
{
    int running = 0;
    st->in_curl = 1;
    curl_multi_socket_action(st->multi, fd, mask, &running);
    st->in_curl = 0;
    check_done(st);
}

static void on_timer(void *ud)
{
    struct ac_http_state *st = ud;
    st->timer = 0;
    socket_action(st, CURL_SOCKET_TIMEOUT, 0);
}

static void on_socket(void *ud, int fd, int revents)
{
    struct ac_http_state *st = ud;
    int mask = 0;
    if (revents & AC_LOOP_READ)
        mask |= CURL_CSELECT_IN;
    if (revents & AC_LOOP_WRITE)
        mask |= CURL_CSELECT_OUT;
    if (revents & AC_LOOP_ERROR)
        mask |= CURL_CSELECT_ERR;
    socket_action(st, fd, mask);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct ac_http_state *st = userp;
    if (st->timer) {
        ac_loop_cancel_timer(st->loop, st->timer);
        st->timer = 0;
    }
    if (timeout_ms < 0 || st->tearing_down)
        return 0;
    /* A 0 ms timeout runs on the next iteration, never from inside curl's call. */
    st->timer = ac_loop_timer_ex(st->loop, timeout_ms, on_timer, st, AC_LOOP_INTERNAL);
    return st->timer ? 0 : -1;
}

static int socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    (void)socketp;
    struct ac_http_state *st = userp;
    uint64_t key = (uint64_t)s + 1;
    ac_sock *sk = ac_idmap_get(&st->socks, key);
    if (what == CURL_POLL_REMOVE) {
        if (sk) {
            ac_idmap_del(&st->socks, key);
            ac_loop_unwatch(st->loop, sk->watch);
            free(sk);
        }
        return 0;
    }
    if (st->tearing_down)
        return 0;
    int events = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        events |= AC_LOOP_READ;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        events |= AC_LOOP_WRITE;
    if (sk)
        return ac_loop_watch_events(st->loop, sk->watch, events) == 0 ? 0 : -1;
    sk = calloc(1, sizeof *sk);
    if (!sk)
        return -1;
    sk->fd = (int)s;
    sk->watch = ac_loop_watch_fd_ex(st->loop, sk->fd, events, on_socket, st, AC_LOOP_INTERNAL);
    if (!sk->watch || ac_idmap_put(&st->socks, key, sk) != 0) {
        ac_loop_unwatch(st->loop, sk->watch);
        free(sk);
        return -1;
    }
    return 0;
}

static void http_teardown(ac_loop *loop, void *state);

static size_t http_active(const void *state)
{
    return ((const struct ac_http_state *)state)->by_id.len;
}

/* The loop's hooks into this module; its address is the key of our state. */
static const ac_loop_client_ops http_client = {http_teardown, http_active};

static struct ac_http_state *http_state(ac_loop *loop)
{
    struct ac_http_state *attached = ac_loop_client(loop, &http_client);
    if (attached)
        return attached;
    if (ac_http_global_init() != 0)
        return NULL;
    struct ac_http_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->loop = loop;
    st->multi = curl_multi_init();
    if (!st->multi) {
        free(st);
        return NULL;
    }
    curl_multi_setopt(st->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(st->multi, CURLMOPT_SOCKETDATA, st);
    curl_multi_setopt(st->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(st->multi, CURLMOPT_TIMERDATA, st);
    curl_multi_setopt(st->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    if (ac_loop_attach(loop, &http_client, st) != 0) {
        curl_multi_cleanup(st->multi);
        free(st);
        return NULL;
    }
    return st;
}

CURLM *ac_loop_multi(ac_loop *loop)
{
    struct ac_http_state *st = http_state(loop);
    return st ? st->multi : NULL;
}

uint64_t ac_http_start(ac_loop *loop, CURL *easy, ac_http_done_fn done, void *ud)
{
    struct ac_http_state *st = http_state(loop);
    if (!st || !easy || st->in_curl)
        return 0; /* curl_multi_add_handle() would fail inside curl's callbacks */
    uint64_t ekey = (uint64_t)(uintptr_t)easy;
    if (ac_idmap_get(&st->by_easy, ekey))
        return 0; /* already lent */
    ac_xfer *x = calloc(1, sizeof *x);
    if (!x)
        return 0;
    x->id = ac_loop_next_id(loop);
    x->easy = easy;
    x->done = done;
    x->ud = ud;
    x->st = st;
    if (ac_idmap_put(&st->by_id, x->id, x) != 0)
        goto fail;
    if (ac_idmap_put(&st->by_easy, ekey, x) != 0) {
        ac_idmap_del(&st->by_id, x->id);
        goto fail;
    }
    if (curl_multi_add_handle(st->multi, easy) != CURLM_OK) {
        ac_idmap_del(&st->by_id, x->id);
        ac_idmap_del(&st->by_easy, ekey);
        goto fail;
    }
    return x->id;
fail:
    free(x);
    return 0;
}

int ac_http_cancel(ac_loop *loop, uint64_t id)
{
    struct ac_http_state *st = ac_loop_client(loop, &http_client);
    ac_xfer *x = st ? ac_idmap_get(&st->by_id, id) : NULL;
    if (!x)
        return AC_HTTP_CANCEL_NONE;
    if (st->in_curl)
        return AC_HTTP_CANCEL_REFUSED; /* curl forbids it (CURLM_RECURSIVE_API_CALL) */
    xfer_unlink(st, x);
    free(x);
    return AC_HTTP_CANCEL_NOW;
}

size_t ac_http_active(ac_loop *loop)
{
    struct ac_http_state *st = ac_loop_client(loop, &http_client);
    return st ? st->by_id.len : 0;
}

int ac_http_set_stall_timeout(ac_loop *loop, uint64_t id, int64_t stall_ms)
{
    struct ac_http_state *st = ac_loop_client(loop, &http_client);
    ac_xfer *x = st ? ac_idmap_get(&st->by_id, id) : NULL;
    if (!x)
        return -1;
    if (x->stall_timer)
        ac_loop_cancel_timer(loop, x->stall_timer);
    x->stall_timer = 0;
    x->stall_ms = stall_ms;
    if (stall_ms <= 0)
        return 0;
    x->seen_bytes = bytes_moved(x->easy);
    x->last_progress_ms = ac_loop_now_ms(loop);
    return arm_stall_check(x);
}

int ac_http_report_progress(ac_loop *loop, uint64_t id)
{
    struct ac_http_state *st = ac_loop_client(loop, &http_client);
    ac_xfer *x = st ? ac_idmap_get(&st->by_id, id) : NULL;
    if (!x)
        return -1;
    x->reported = 1;
    return 0;
}

void ac_http_progress(ac_loop *loop, uint64_t id)
{
    struct ac_http_state *st = ac_loop_client(loop, &http_client);
    ac_xfer *x = st ? ac_idmap_get(&st->by_id, id) : NULL;
    if (x)
        x->last_progress_ms = ac_loop_now_ms(loop);
}

/* Called by ac_loop_free(): no done callback runs; easy handles go back to their owners. */
static void http_teardown(ac_loop *loop, void *state)
{
    struct ac_http_state *st = state;
    st->tearing_down = 1;
    ac_xfer *x;
    while ((x = ac_idmap_any(&st->by_id, NULL)) != NULL) {
        xfer_unlink(st, x);
        free(x);
    }
    /* Closes cached connections; curl may still report sockets removed. */
    curl_multi_cleanup(st->multi);
    ac_sock *sk;
    uint64_t key;
    while ((sk = ac_idmap_any(&st->socks, &key)) != NULL) {
        ac_idmap_del(&st->socks, key);
        ac_loop_unwatch(loop, sk->watch);
        free(sk);
    }
    if (st->timer)
        ac_loop_cancel_timer(loop, st->timer);
    ac_idmap_clear(&st->by_id);
    ac_idmap_clear(&st->by_easy);
    ac_idmap_clear(&st->socks);
    free(st);
}
