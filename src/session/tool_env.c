/*
 * tool_env.c - the environment a tool process gets. Nothing is inherited by
 * default but a short list of harmless variables (ac_toolfile_default_inherit:
 * PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR); a tool file's
 * "inherit_env" replaces that list and its "env" sets variables outright.
 *
 * The provider's credentials are never inherited, whatever the list says:
 * - OPENAI_API_KEY, ANTHROPIC_API_KEY and the variable the key was read from
 *   (ac_engine_config.api_key_env);
 * - any variable whose value is one of the engine's secrets (util/secrets.h:
 *   the API key, --header values, the base URL's userinfo) or contains one
 *   that is at least AC_SECRET_MIN_LEN bytes long (e.g. OPENAI_BASE_URL with
 *   a password in it).
 * "env" values are the tool file's own and are passed as written.
 */
#include <stdlib.h>
#include <string.h>

#include "session/tools_internal.h"
#include "tools/toolfile.h"
#include "util/secrets.h"

extern char **environ;

static const char *const never_inherited[] = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", NULL};

/* 1 if NAME=value entry kv has a name matched by pattern (NAME or PREFIX*). */
static int name_matches(const char *kv, size_t name_len, const char *pattern)
{
    size_t pl = strlen(pattern);
    if (pl > 0 && pattern[pl - 1] == '*')
        return name_len >= pl - 1 && memcmp(kv, pattern, pl - 1) == 0;
    return name_len == pl && memcmp(kv, pattern, pl) == 0;
}

static int holds_secret(const ac_engine *e, const char *kv, size_t name_len)
{
    for (const char *const *n = never_inherited; *n; n++)
        if (name_matches(kv, name_len, *n))
            return 1;
    if (e->api_key_env && name_matches(kv, name_len, e->api_key_env))
        return 1;
    const char *value = kv + name_len + 1;
    for (char *const *s = e->secrets; s && *s; s++) {
        if (strcmp(value, *s) == 0)
            return 1;
        if (strlen(*s) >= AC_SECRET_MIN_LEN && strstr(value, *s))
            return 1;
    }
    return 0;
}

char **ac_tool_env(const ac_engine *e, const ac_tool *t)
{
    const char *const *keep =
        t->inherit_env ? (const char *const *)t->inherit_env : ac_toolfile_default_inherit;
    size_t n = 0, cap = 1;
    for (char **v = environ; v && *v; v++)
        cap++;
    for (char **v = t->env; v && *v; v++)
        cap++;
    char **env = calloc(cap, sizeof *env);
    if (!env)
        return NULL;
    for (char **v = environ; v && *v; v++) {
        const char *eq = strchr(*v, '=');
        if (!eq || eq == *v)
            continue;
        size_t nl = (size_t)(eq - *v);
        int wanted = 0;
        for (const char *const *k = keep; *k && !wanted; k++)
            wanted = name_matches(*v, nl, *k);
        if (!wanted || holds_secret(e, *v, nl))
            continue;
        int set_by_tool = 0;
        for (char **s = t->env; s && *s && !set_by_tool; s++)
            set_by_tool = strncmp(*s, *v, nl + 1) == 0;
        if (!set_by_tool)
            env[n++] = *v;
    }
    for (char **v = t->env; v && *v; v++)
        env[n++] = *v;
    env[n] = NULL;
    return env;
}
