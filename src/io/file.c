/* file.c - whole-file reads with a size cap; see file.h. */
#include "io/file.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/buf.h"

char *ac_read_stream(FILE *f, size_t cap, size_t *len_out)
{
    ac_buf b; /* one byte over cap: reading it means the data is too big */
    ac_buf_init(&b, cap < SIZE_MAX ? cap + 1 : cap);
    errno = 0;
    for (;;) {
        size_t want = b.max - b.n < 4096 ? b.max - b.n : 4096;
        if (ac_buf_reserve(&b, want) != 0) {
            ac_buf_free(&b);
            errno = ENOMEM;
            return NULL;
        }
        size_t r = fread(b.p + b.n, 1, want, f);
        ac_buf_commit(&b, r);
        if (b.n > cap) {
            ac_buf_free(&b);
            errno = EFBIG;
            return NULL;
        }
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno; /* what the read failed with (EISDIR for a folder), else EIO */
        ac_buf_free(&b);
        errno = e ? e : EIO;
        return NULL;
    }
    return ac_buf_take(&b, len_out);
}

char *ac_read_file(const char *path, size_t cap, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = ac_read_stream(f, cap, len_out);
    int saved = errno;
    fclose(f);
    errno = saved;
    return buf;
}
