/*
 * sse_stalled.c - a Server-Sent Events reader that stops reading: it sends its request (HTTP/1.0,
 * so the body comes unchunked) on a socket with a small receive buffer, reads nothing until the
 * file GATE exists, then reads the response into OUT until it holds a whole turn_done frame, the
 * connection ends, or 180 s passed. A server's sends to it block after a few kilobytes: what the
 * server queues for it meanwhile is what a slow client costs. Exit 0: a turn_done frame was read.
 *
 *   sse_stalled PORT PATH GATE OUT
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* b (len bytes, of which the first `from` were looked at before) holds a whole turn_done
 * frame, its data line and the blank line after it; *at: where its head is (0: not yet). */
static int turn_done(const char *b, size_t len, size_t from, size_t *at)
{
    static const char head[] = "event: turn_done\ndata: ";
    size_t back = sizeof head + 1; /* a head or an end split by the last read */
    size_t s = from > back ? from - back : 0;
    if (!*at) {
        const char *t = strstr(b + s, head);
        if (!t)
            return 0;
        *at = (size_t)(t - b) + 1;
        s = *at;
    }
    (void)len;
    return strstr(b + (s > *at ? s : *at), "\n\n") != NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: sse_stalled PORT PATH GATE OUT\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0), small = 4096;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) ||
        connect(fd, (struct sockaddr *)&a, sizeof a)) {
        perror("sse_stalled: connect");
        return 1;
    }
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n", argv[2],
                     argv[1]);
    if (n < 0 || (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n) {
        perror("sse_stalled: request");
        return 1;
    }
    double end = now_s() + 180;
    while (access(argv[3], F_OK) != 0 && now_s() < end)
        usleep(20000);
    size_t len = 0, cap = 1 << 20;
    char *b = malloc(cap + 1);
    FILE *out = fopen(argv[4], "w");
    if (!b || !out)
        return 1;
    b[0] = 0;
    int done = 0;
    size_t at = 0;
    while (!done && now_s() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        if (len + 65536 > cap) {
            char *nb = realloc(b, (cap *= 2) + 1);
            if (!nb)
                return 1;
            b = nb;
        }
        ssize_t k = read(fd, b + len, 65536);
        if (k <= 0)
            break;
        fwrite(b + len, 1, (size_t)k, out);
        size_t from = len;
        len += (size_t)k;
        b[len] = 0;
        done = turn_done(b, len, from, &at);
    }
    fclose(out);
    close(fd);
    free(b);
    return done ? 0 : 1;
}
