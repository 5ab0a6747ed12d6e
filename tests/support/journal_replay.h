/* Test support: rebuilds a session from its journal the way `agentc replay`
 * does (a replay session, every event line posted in order, no I/O). */
#ifndef AGENTC_TEST_JOURNAL_REPLAY_H
#define AGENTC_TEST_JOURNAL_REPLAY_H

#include "agentc/agentc.h"

/* The replayed session (free it), or NULL with a message in err. *events
 * gets the number of events posted. */
ac_session *test_replay_journal(ac_engine *e, const char *id, const char *path, int *events,
                                char *err, size_t errcap);

#endif
