/*
 * bench_mhd_sse.c - a bare libmicrohttpd SSE sender, the floor bench/bench_serve.sh measures
 * agentc serve's append-to-client delay against in the same run. It speaks just enough of
 * serve's API for bench/serve_clients.mjs: POST /v1/sessions ({"id"}) makes a session, GET
 * /v1/sessions/ID/events streams its events, POST /v1/sessions/ID/messages starts its turn:
 * EVENTS events (default 52) DELAY ms apart (default 20), each `data: {"t_us":...}` stamped when
 * it is appended, the last `event: turn_done`. One MHD thread (epoll, suspend/resume, as serve
 * runs it), one thread appending the events; nothing else (no engine, no store, no frames).
 *
 *   bench_mhd_sse PORT_FILE [EVENTS] [DELAY_MS]
 */
#define _GNU_SOURCE
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SESSIONS 20000

typedef struct sess {
    char id[64];
    pthread_mutex_t mu;
    char *buf; /* appended, not yet sent */
    size_t len, cap;
    int started, left, done, suspended;
    int64_t next_us;
    struct MHD_Connection *conn;
} sess;

static sess *sessions;
static int n_sessions, n_events = 52, delay_ms = 20;
static pthread_mutex_t reg = PTHREAD_MUTEX_INITIALIZER;

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static sess *find(const char *id, size_t n)
{
    for (int i = 0; i < n_sessions; i++)
        if (strlen(sessions[i].id) == n && !strncmp(sessions[i].id, id, n))
            return &sessions[i];
    return NULL;
}

/* Appends one event to s (its lock held) and resumes its stream if it waits. */
static void append(sess *s, const char *kind)
{
    char ev[160];
    long long t = (long long)now_us();
    int n = kind ? snprintf(ev, sizeof ev, "event: %s\ndata: {\"t_us\":%lld}\n\n", kind, t)
                 : snprintf(ev, sizeof ev, "data: {\"t_us\":%lld}\n\n", t);
    if (s->len + (size_t)n > s->cap) {
        size_t cap = (s->cap ? s->cap * 2 : 1024) + (size_t)n;
        char *b = realloc(s->buf, cap);
        if (!b)
            return;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, ev, (size_t)n);
    s->len += (size_t)n;
    if (s->suspended && s->conn) {
        s->suspended = 0;
        MHD_resume_connection(s->conn);
    }
}

static void *producer(void *arg)
{
    (void)arg;
    for (;;) {
        int64_t t = now_us();
        pthread_mutex_lock(&reg);
        int n = n_sessions;
        pthread_mutex_unlock(&reg);
        for (int i = 0; i < n; i++) {
            sess *s = &sessions[i];
            pthread_mutex_lock(&s->mu);
            if (s->started && s->left > 0 && t >= s->next_us) {
                s->left--;
                append(s, s->left ? NULL : "turn_done");
                s->next_us = t + delay_ms * 1000;
            }
            pthread_mutex_unlock(&s->mu);
        }
        usleep(1000);
    }
    return NULL;
}

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    sess *s = cls;
    pthread_mutex_lock(&s->mu);
    size_t n = s->len < max ? s->len : max;
    if (n) {
        memcpy(out, s->buf, n);
        memmove(s->buf, s->buf + n, s->len - n);
        s->len -= n;
    } else if (!s->started || s->left > 0) {
        s->suspended = 1; /* resumed by the next append */
        MHD_suspend_connection(s->conn);
    }
    int end = !n && s->started && s->left == 0;
    pthread_mutex_unlock(&s->mu);
    return end ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **ctx)
{
    (void)cls, (void)version;
    static int body_mark;
    if (!strcmp(method, "POST") && !*ctx) {
        *ctx = &body_mark; /* the body comes in the next calls: ignored */
        return MHD_YES;
    }
    if (*data_size) {
        *data_size = 0;
        return MHD_YES;
    }
    const char *p = "/v1/sessions";
    if (strncmp(url, p, strlen(p)))
        return reply(c, 404, "{}");
    const char *rest = url + strlen(p);
    if (!strcmp(method, "POST") && !*rest) {
        pthread_mutex_lock(&reg);
        sess *s = n_sessions < MAX_SESSIONS ? &sessions[n_sessions] : NULL;
        if (s)
            snprintf(s->id, sizeof s->id, "s%d", n_sessions++);
        pthread_mutex_unlock(&reg);
        char body[96];
        snprintf(body, sizeof body, "{\"id\":\"%s\"}", s ? s->id : "");
        (void)data;
        return reply(c, s ? 201 : 503, body);
    }
    const char *slash = *rest == '/' ? strchr(rest + 1, '/') : NULL;
    sess *s = slash ? find(rest + 1, (size_t)(slash - rest - 1)) : NULL;
    if (!s)
        return reply(c, 404, "{}");
    if (!strcmp(method, "GET") && !strcmp(slash, "/events")) {
        s->conn = c;
        struct MHD_Response *r =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, s, NULL);
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        enum MHD_Result ret = MHD_queue_response(c, 200, r);
        MHD_destroy_response(r);
        return ret;
    }
    if (!strcmp(method, "POST") && !strcmp(slash, "/messages")) {
        pthread_mutex_lock(&s->mu);
        s->started = 1;
        s->left = n_events;
        s->next_us = now_us();
        pthread_mutex_unlock(&s->mu);
        return reply(c, 202, "{}");
    }
    return reply(c, 404, "{}");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_mhd_sse PORT_FILE [EVENTS] [DELAY_MS]\n");
        return 2;
    }
    char *end = NULL;
    if (argc > 2 && ((n_events = (int)strtol(argv[2], &end, 10)) <= 0 || *end))
        return fprintf(stderr, "bench_mhd_sse: EVENTS is a positive number\n"), 2;
    if (argc > 3 && ((delay_ms = (int)strtol(argv[3], &end, 10)) < 0 || *end))
        return fprintf(stderr, "bench_mhd_sse: DELAY_MS is a number of milliseconds\n"), 2;
    signal(SIGPIPE, SIG_IGN);
    sessions = calloc(MAX_SESSIONS, sizeof *sessions);
    if (!sessions)
        return 1;
    for (int i = 0; i < MAX_SESSIONS; i++)
        pthread_mutex_init(&sessions[i].mu, NULL);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
        on_request, NULL, MHD_OPTION_CONNECTION_LIMIT, 2 * MAX_SESSIONS, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench_mhd_sse: cannot start the daemon\n");
        return 1;
    }
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", i ? i->port : 0) < 0 || fclose(f) || rename(tmp, argv[1]))
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, producer, NULL);
    pause();
    return 0;
}
