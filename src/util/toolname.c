/* Display and wire names of namespaced tools; see toolname.h. */
#include "util/toolname.h"

#include <stdio.h>
#include <string.h>

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

int ac_toolname_prefix_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > AC_TOOLNAME_MAX - 3 || s[0] == '_' || s[n - 1] == '_' || strstr(s, "__"))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return 0;
    return 1;
}

int ac_toolname_plain_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > AC_TOOLNAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return 0;
    return 1;
}

int ac_toolname_compose(const char *prefix, const char *tool, char *out, size_t cap, char *why,
                        size_t whycap)
{
    if (!ac_toolname_prefix_ok(prefix)) {
        snprintf(why, whycap,
                 "prefix \"%.80s\" must be letters, digits, '-' and single '_' (not \"__\", not "
                 "starting or ending with '_')",
                 prefix ? prefix : "");
        return -1;
    }
    if (!ac_toolname_plain_ok(tool)) {
        snprintf(why, whycap, "tool name \"%.80s\" must be 1 to 64 letters, digits, '_' or '-'",
                 tool ? tool : "");
        return -1;
    }
    size_t wire = strlen(prefix) + 2 + strlen(tool);
    if (wire > AC_TOOLNAME_MAX) {
        snprintf(why, whycap,
                 "\"%s::%s\" is sent to the model as \"%s__%s\", %zu characters: the providers "
                 "accept at most %d",
                 prefix, tool, prefix, tool, wire, AC_TOOLNAME_MAX);
        return -1;
    }
    if ((size_t)snprintf(out, cap, "%s::%s", prefix, tool) >= cap) {
        snprintf(why, whycap, "name buffer too small");
        return -1;
    }
    return 0;
}

int ac_toolname_to_wire(const char *name, char *out, size_t cap)
{
    size_t n = strlen(name), k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k + 1 >= cap)
            return -1;
        if (name[i] == ':' && name[i + 1] == ':') {
            out[k++] = '_';
            out[k++] = '_';
            i++;
        } else {
            out[k++] = name[i];
        }
    }
    if (k >= cap)
        return -1;
    out[k] = 0;
    return 0;
}

int ac_toolname_from_wire(const char *wire, int (*known)(void *ud, const char *display), void *ud,
                          char *out, size_t cap)
{
    size_t n = strlen(wire);
    if (n + 1 > cap)
        return -1;
    const char *sep = strstr(wire, AC_TOOLNAME_WIRE_SEP);
    if (sep && sep != wire && sep[2] && known) {
        memcpy(out, wire, n + 1);
        out[sep - wire] = ':';
        out[sep - wire + 1] = ':';
        if (known(ud, out))
            return 1;
    }
    memcpy(out, wire, n + 1);
    return 0;
}

const char *ac_toolname_split(const char *display, size_t *plen)
{
    const char *sep = display ? strstr(display, AC_TOOLNAME_SEP) : NULL;
    if (!sep)
        return NULL;
    if (plen)
        *plen = (size_t)(sep - display);
    return sep + 2;
}
