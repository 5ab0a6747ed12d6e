/* Test support: see journal_replay.h. */
#include "journal_replay.h"

#include <stdio.h>

ac_session *test_replay_journal(ac_engine *e, const char *id, const char *path, int *events,
                                char *err, size_t errcap)
{
    (void)id; /* the journal's header names the session */
    ac_replay_result res;
    ac_session *s = NULL;
    int rc = ac_session_replay(e, path, AC_REPLAY_CHECK, &res, &s);
    *events = (int)res.events;
    if (rc == AC_REPLAY_ERROR)
        snprintf(err, errcap, "%s", res.error);
    else if (rc == AC_REPLAY_DIVERGED && res.step == 0)
        snprintf(err, errcap, "%s: event %zu (%s) refused", path, res.event, res.event_name);
    else if (rc == AC_REPLAY_DIVERGED)
        snprintf(err, errcap, "%s: event %zu (%s), step %zu: recorded line %d, replayed line %d",
                 path, res.event, res.event_name, res.step, res.recorded.line, res.replayed.line);
    if (rc != AC_REPLAY_MATCH) {
        ac_session_free(s);
        return NULL;
    }
    return s;
}
