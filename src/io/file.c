/* file.c - whole-file reads with a size cap; see file.h. */
#include "io/file.h"

#include <errno.h>
#include <stdlib.h>

char *ac_read_stream(FILE *f, size_t cap, size_t *len_out)
{
    size_t len = 0, sz = 4096;
    char *buf = malloc(sz);
    if (!buf) {
        errno = ENOMEM;
        return NULL;
    }
    errno = 0;
    for (;;) {
        size_t r = fread(buf + len, 1, sz - len - 1, f);
        len += r;
        if (len > cap) {
            free(buf);
            errno = EFBIG;
            return NULL;
        }
        if (r == 0)
            break;
        if (len + 1 == sz) {
            char *nb = realloc(buf, sz * 2);
            if (!nb) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
            sz *= 2;
        }
    }
    if (ferror(f)) {
        int e = errno; /* what the read failed with (EISDIR for a folder), else EIO */
        free(buf);
        errno = e ? e : EIO;
        return NULL;
    }
    buf[len] = 0;
    if (len_out)
        *len_out = len;
    return buf;
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
