# Tests of engines and sessions: the scripted provider end to end, journals and
# replay (in-process and through the CLI), retries, failures, and cancellation.
agentc_add_test(session_engine SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_session.c
  LIBS agentc_runtime agentc_io agentc_test_replay ARGS $<TARGET_FILE:agentc> LABELS session)
agentc_add_test(session_binding SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_binding.c
  LIBS agentc_runtime agentc_gen LABELS session)
# The event queue: posts from 4 threads into 100 streaming sessions, cancels from an output
# callback and from another thread during an HTTP stream (label "threads": run under
# ThreadSanitizer in CI).
agentc_add_test(session_event_flow SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_event_flow.c
  LIBS agentc_runtime agentc_io agentc_test_httpd PkgConfig::JANSSON Threads::Threads
  LABELS session threads)
# The journal's writer and reader, and replay through the public API.
agentc_add_test(session_journal SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_journal.c
  LIBS agentc_runtime agentc_io agentc_gen LABELS session)
# Honest journals through the CLI: write failures, modes, symlinks, replay --check of
# damaged journals.
add_test(NAME cli_journal_honest
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/journal_honest.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_journal_honest PROPERTIES LABELS "session;cli" TIMEOUT 60)
# The public entry points given NULL arguments: an error code or nothing, never a crash.
agentc_add_test(session_embed_null SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_embed_null.c
  LIBS agentc_runtime agentc_io LABELS session)
# The spec language v2 on a real engine: outside events and the embedding API, stuck
# sessions, comparison guards, fail() reasons, after timers.
agentc_add_test(session_spec_v2 SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_spec_v2.c
  LIBS agentc_runtime agentc_io agentc_gen LABELS session)
# Replay reports what the run reported: the output callbacks of a run (the demo's turns,
# parallel calls, gallery specs approve_tools and retry_429; `agentc demo --jsonl` itself)
# equal those of ac_session_replay of its journal, but for the callbacks agentc.h marks
# run-only.
agentc_add_test(session_replay_output SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_replay_output.c
  LIBS agentc_runtime agentc_io agentc_gen PkgConfig::JANSSON ARGS $<TARGET_FILE:agentc>
  LABELS session)
# The error space: ac_strerror names every code of enum ac_status (read from agentc.h).
agentc_add_test(session_status_names SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_status_names.c
  LIBS agentc_runtime LABELS session)
# Typed event payloads: a delta's JSON text is jansson's, byte for byte (compact and ASCII);
# a typed delta is journaled, repaired, read by append_delta, and made JSON for a handler the
# program registered only.
agentc_add_test(session_payload SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_payload.c
  LIBS agentc_runtime agentc_io agentc_gen PkgConfig::JANSSON LABELS session)
if(AGENTC_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  # libFuzzer target: typed payloads' JSON text and value against jansson's (bounded in ctest).
  add_executable(fuzz_payload ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_payload.c
    ${CMAKE_SOURCE_DIR}/src/session/payload.c ${CMAKE_SOURCE_DIR}/src/util/json_text.c
    ${CMAKE_SOURCE_DIR}/src/util/utf8.c ${CMAKE_SOURCE_DIR}/src/util/buf.c
    ${CMAKE_SOURCE_DIR}/src/util/grow.c)
  target_include_directories(fuzz_payload PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
    ${AGENTC_GENERATED_INCLUDE_DIR})
  target_compile_options(fuzz_payload PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_payload PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_payload PRIVATE PkgConfig::JANSSON)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz_payload_corpus)
  add_test(NAME fuzz_session_payload
    COMMAND fuzz_payload -max_total_time=30 -rss_limit_mb=1024 -timeout=10
            ${CMAKE_BINARY_DIR}/fuzz_payload_corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/payload_seeds
            ${CMAKE_SOURCE_DIR}/tests/fuzz/delta_seeds
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(fuzz_session_payload PROPERTIES LABELS "session;fuzz" TIMEOUT 120)
endif()
