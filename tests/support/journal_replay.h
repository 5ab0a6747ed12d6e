/* Test support: rebuilds a session from its journal with ac_session_replay,
 * checking every event's steps against the recorded ones. */
#ifndef AGENTC_TEST_JOURNAL_REPLAY_H
#define AGENTC_TEST_JOURNAL_REPLAY_H

#include "agentc/agentc.h"

/* The replayed session (free it), or NULL with a message in err (an unreadable
 * journal or a divergence). *events gets the number of events posted. id is
 * not used: the journal's header names the session. */
ac_session *test_replay_journal(ac_engine *e, const char *id, const char *path, int *events,
                                char *err, size_t errcap);

#endif
