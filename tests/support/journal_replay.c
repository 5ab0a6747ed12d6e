/* Test support: see journal_replay.h. */
#include "journal_replay.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "session/session_int.h" /* ac_session_new_replay */

ac_session *test_replay_journal(ac_engine *e, const char *id, const char *path, int *events,
                                char *err, size_t errcap)
{
    *events = 0;
    ac_session *s = ac_session_new_replay(e, id, err, errcap);
    if (!s)
        return NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errcap, "cannot open %s", path);
        ac_session_free(s);
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0;
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        json_error_t jerr;
        json_t *v = json_loads(line, 0, &jerr);
        if (!v) {
            snprintf(err, errcap, "%s:%d: %s", path, lineno, jerr.text);
            ac_session_free(s);
            s = NULL;
            break;
        }
        json_t *ev = json_object_get(v, "ev");
        if (json_is_string(ev)) {
            int rc =
                ac_session_post(s, json_string_value(ev), json_incref(json_object_get(v, "data")),
                                json_integer_value(json_object_get(v, "t")));
            if (rc == -2) {
                snprintf(err, errcap, "%s:%d: event %s refused", path, lineno,
                         json_string_value(ev));
                json_decref(v);
                ac_session_free(s);
                s = NULL;
                break;
            }
            (*events)++;
        }
        json_decref(v);
    }
    free(line);
    fclose(f);
    return s;
}
