/* grow.c - room in a growable array (grow.h). */
#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int ac_grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return -1;
        nc *= 2;
    }
    if (elem && nc > SIZE_MAX / elem)
        return -1;
    char *p = realloc(*v, nc * elem);
    if (!p)
        return -1;
    memset(p + *cap * elem, 0, (nc - *cap) * elem);
    *v = p;
    *cap = nc;
    return 0;
}
