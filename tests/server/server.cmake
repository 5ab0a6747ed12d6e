# agentc serve, end to end over loopback HTTP.
add_test(NAME server_api
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/serve.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_api PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 180)
add_test(NAME server_openai_client
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/openai.sh $<TARGET_FILE:agentc> ${CMAKE_BINARY_DIR}/npm
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_openai_client PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 400)
add_test(NAME server_audit_page
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/page.sh $<TARGET_FILE:agentc> ${CMAKE_BINARY_DIR}/artifacts
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_audit_page PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_durable
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/durable.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_durable PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 180)
add_test(NAME server_outside_events
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/outside.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_outside_events PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_decisions
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/decisions.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_decisions PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_state_view
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/state_view.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_state_view PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME server_session_system
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/session_system.sh $<TARGET_FILE:agentc> $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_session_system PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_renamed_states
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/renamed.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_renamed_states PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_discarded
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/discard.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_discarded PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_journal_frames
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/journal_frames.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_journal_frames PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_memory_cap
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/memory_cap.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_memory_cap PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_long_turn
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/long_turn.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_long_turn PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
# Text frames written from the deltas (plain ASCII copied, the rest JSON-encoded) join to the
# answer byte for byte, live and on a reconnect: quotes, backslashes, control characters, UTF-8.
add_test(NAME server_escapes
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/escapes.sh $<TARGET_FILE:agentc>)
set_tests_properties(server_escapes PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 60)
# Named agents (docs/agents.md): two agents in one server, per-session overrides, the
# OpenAI-compatible front by agent name (the official `openai` npm package).
add_test(NAME server_agents
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/agents.sh $<TARGET_FILE:agentc>
          $<TARGET_FILE:agentc_test_httpd_main> ${CMAKE_BINARY_DIR}/npm
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_agents PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 180)
add_test(NAME server_agent_memory
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/agent_memory.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_agent_memory PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_turns
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/turns.sh $<TARGET_FILE:agentc> $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_turns PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_agent_change
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/agent_change.sh $<TARGET_FILE:agentc>
          $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_agent_change PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_admission
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/admission.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_admission PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
# Three workers on one PostgreSQL store (the pg_cluster fixture of tests/store): a session
# created, messaged and streamed on different workers, forwarded requests, a stopped and a
# killed holder.
if(TARGET agentc_store AND DEFINED AGENTC_PG_TEST_URI)
  add_test(NAME server_workers_pg COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers_pg.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_pg PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" SKIP_RETURN_CODE 77 TIMEOUT 120 RESOURCE_LOCK pg_cluster)
  # The README's three workers, one command each as written, behind a load balancer's name
  add_test(NAME server_workers_readme COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers_readme.sh
    $<TARGET_FILE:agentc> $<TARGET_FILE:agentc_test_httpd_main> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR}
    ${AGENTC_PG_TEST_PORT} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_readme PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" SKIP_RETURN_CODE 77 TIMEOUT 120 RESOURCE_LOCK pg_cluster)
  # The second of two workers behind a slow database: its reads of what the first did wait
  # suspended, its loop answering /healthz meanwhile.
  add_test(NAME server_workers_pg_slowdb COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers_pg_slow.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_pg_slowdb PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" SKIP_RETURN_CODE 77 TIMEOUT 120 RESOURCE_LOCK pg_cluster)
  # Its writes outside a session's commit (a create's row, a delete) wait suspended too.
  add_test(NAME server_workers_pg_slowwrite COMMAND bash
    ${CMAKE_SOURCE_DIR}/tests/server/workers_pg_slowwrite.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_pg_slowwrite PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" SKIP_RETURN_CODE 77 TIMEOUT 120 RESOURCE_LOCK pg_cluster)
  # The same, a session claimed and one loaded for a request there: from their rows read ahead;
  # a request for a session a claim is loading waits for that load, at most the forward timeout.
  add_test(NAME server_workers_pg_slowload COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers_pg_slow.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT} loads
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_pg_slowload PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg;slow" SKIP_RETURN_CODE 77 TIMEOUT 180 RESOURCE_LOCK pg_cluster)
  # The same, a fork, a sub-agent's session, DELETEs of sessions mid-turn, a handoff and parents
  # left mid-call there: without waiting, and a fork forwarded there from the first worker (every
  # packet held 250 ms; about 4 min under ctest -j2).
  add_test(NAME server_workers_pg_slowfork COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers_pg_slow.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT} forks
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_pg_slowfork PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg;slow" SKIP_RETURN_CODE 77 TIMEOUT 480 RESOURCE_LOCK pg_cluster)
  # A worker whose database cannot be reached: a request needing the store's connection answered
  # 503 at once (the connection made again in the background, never waited for on the loop).
  add_test(NAME server_workers_pg_outage COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers_pg_outage.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_pg_outage PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" SKIP_RETURN_CODE 77 TIMEOUT 120 RESOURCE_LOCK pg_cluster)
  # A handoff with a stream open on its worker: the stream's frames made again from the journal
  # read without waiting, nothing sent twice or left out.
  add_test(NAME server_handoff_pg COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/handoff_pg.sh
    $<TARGET_FILE:agentc> $<TARGET_FILE:agentc_test_httpd_main> ${AGENTC_PG_TEST_URI}
    ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_handoff_pg PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" SKIP_RETURN_CODE 77 TIMEOUT 120 RESOURCE_LOCK pg_cluster)
  # The OpenAI-compatible front's follow-up for a kept session not in memory: loaded without
  # waiting on the loop.
  add_test(NAME server_client_tools_pg COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/client_tools_pg.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_client_tools_pg PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" SKIP_RETURN_CODE 77 TIMEOUT 120 RESOURCE_LOCK pg_cluster)
endif()
# What one request may cost the loop, what a token may send and hold, how a request is framed.
add_test(NAME server_bounds
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/bounds.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_bounds PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 180)
# Three workers on one PostgreSQL database (the pg_cluster fixture of tests/store): kill -9 of
# the worker running turns (3 trials; 10 in server_workers_slow), a worker paused past its lease,
# SIGTERM drain, the database stopped and started again; /healthz, /readyz, /v1/workers.
if(TARGET agentc_store AND DEFINED AGENTC_PG_TEST_URI)
  add_test(NAME server_workers COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT} 3
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # it stops and starts the cluster: no other test of the cluster runs meanwhile
  set_tests_properties(server_workers PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg" TIMEOUT 240 RESOURCE_LOCK pg_cluster)
  add_test(NAME server_workers_slow COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/workers.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT} 10
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(server_workers_slow PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "server;pg;slow" TIMEOUT 480 RESOURCE_LOCK pg_cluster)
endif()
# Sessions of one agent share an engine-scoped tool-result cache.
add_test(NAME server_cache
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/cache.sh $<TARGET_FILE:agentc> $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_cache PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_compose
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/compose.sh $<TARGET_FILE:agentc> $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_compose PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME server_guardrails
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/guardrails.sh $<TARGET_FILE:agentc> $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_guardrails PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 120)
# Client tools on the OpenAI-compatible front: the official `openai` npm package drives a
# request's tool calls and their follow-up (streamed and not); curl for the errors, another
# token, a restart, the timeout and the journals' replay.
add_test(NAME server_client_tools
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/client_tools.sh $<TARGET_FILE:agentc> ${CMAKE_BINARY_DIR}/npm
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_client_tools PROPERTIES LABELS server SKIP_RETURN_CODE 77 TIMEOUT 180)
# A reader that stops reading beside two that read (sse_stalled: a client with a small receive
# buffer that reads nothing until a gate file exists).
add_executable(sse_stalled ${CMAKE_SOURCE_DIR}/tests/server/sse_stalled.c)
add_test(NAME server_slow_reader
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/slow_reader.sh $<TARGET_FILE:agentc> $<TARGET_FILE:sse_stalled>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(server_slow_reader PROPERTIES LABELS "server;slow" SKIP_RETURN_CODE 77 TIMEOUT 400)
