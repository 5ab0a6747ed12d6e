/* The floor for bench_batch: a bare libcurl-multi client that sends the same
 * requests as an agentc batch run, at the same concurrency, to the same server,
 * and reads the answers without interpreting them.
 *
 *   bench_floor URL BODIES CONCURRENCY
 *
 * BODIES holds one request body a line, sessions separated by an empty line
 * (bench_batch.sh makes it from the server's request log). A session's requests
 * go one after the other, each once the previous answer has been read, as a
 * session's model calls do; CONCURRENCY sessions run at a time on one multi
 * handle. Prints the number of requests and answer bytes; the caller measures
 * the CPU time. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"

typedef struct session {
    char **bodies;
    size_t n, next;
} session;

typedef struct slot {
    CURL *h;
    session *s;
    size_t got;
} slot;

static size_t sink(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)p;
    ((slot *)ud)->got += size * nmemb;
    return size * nmemb;
}

static session *load(const char *path, size_t *n_out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(1);
    }
    session *ss = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int fresh = 1;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0) {
            fresh = 1;
            continue;
        }
        if (fresh) {
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                ss = realloc(ss, cap * sizeof *ss);
                if (!ss)
                    exit(1);
            }
            memset(&ss[n++], 0, sizeof *ss);
            fresh = 0;
        }
        session *s = &ss[n - 1];
        s->bodies = realloc(s->bodies, (s->n + 1) * sizeof *s->bodies);
        if (!s->bodies)
            exit(1);
        s->bodies[s->n] = malloc((size_t)len + 1);
        if (!s->bodies[s->n])
            exit(1);
        memcpy(s->bodies[s->n++], line, (size_t)len + 1);
    }
    free(line);
    fclose(f);
    *n_out = n;
    return ss;
}

static struct curl_slist *headers;
static const char *url;

static void start(CURLM *m, slot *sl)
{
    session *s = sl->s;
    const char *body = s->bodies[s->next++];
    CURL *h = sl->h;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sl);
    curl_easy_setopt(h, CURLOPT_PRIVATE, sl);
    curl_multi_add_handle(m, h);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_floor URL BODIES CONCURRENCY\n");
        return 2;
    }
    url = argv[1];
    int conc = (int)bench_arg(argv[3], 1, 100000, "concurrency");
    size_t n;
    session *ss = load(argv[2], &n);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    headers = curl_slist_append(NULL, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: text/event-stream");
    headers = curl_slist_append(headers, "Authorization: Bearer x");
    headers = curl_slist_append(headers, "Expect:");
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)conc);
    slot *slots = calloc((size_t)conc, sizeof *slots);
    size_t next_session = 0, requests = 0, bytes = 0, failed = 0;
    int running = 0;
    for (int i = 0; i < conc && next_session < n; i++) {
        slots[i].h = curl_easy_init();
        slots[i].s = &ss[next_session++];
        start(m, &slots[i]);
        running++;
    }
    while (running) {
        int still;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            slot *sl;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&sl);
            long status = 0;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            failed += msg->data.result != CURLE_OK || status != 200;
            requests++;
            bytes += sl->got;
            sl->got = 0;
            curl_multi_remove_handle(m, sl->h);
            if (sl->s->next < sl->s->n) {
                start(m, sl);
            } else if (next_session < n) {
                sl->s = &ss[next_session++];
                start(m, sl);
            } else {
                running--;
            }
        }
        if (running)
            curl_multi_poll(m, NULL, 0, 1000, NULL);
    }
    printf("floor: %zu sessions, %zu requests, %zu answer bytes, %zu failed\n", n, requests, bytes,
           failed);
    for (int i = 0; i < conc; i++)
        if (slots[i].h)
            curl_easy_cleanup(slots[i].h);
    free(slots);
    curl_multi_cleanup(m);
    curl_slist_free_all(headers);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < ss[i].n; k++)
            free(ss[i].bodies[k]);
        free(ss[i].bodies);
    }
    free(ss);
    curl_global_cleanup();
    return failed ? 1 : 0;
}
