# Tools run through a real engine on a real loop with the scripted provider:
# parallel calls, argument validation, child process outcomes, callback tools,
# the internal context tools, the State (references, output paths, plans) and a session's
# client tools (answered later by its caller).
foreach(t parallel args proc callback internal state subagent client)
  agentc_add_test(tools_run_${t}
    SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_tools_${t}.c
    LIBS agentc_runtime agentc_io Threads::Threads
    LABELS tools)
endforeach()
# completions from other threads: also run under ThreadSanitizer in CI
set_tests_properties(tools_run_callback PROPERTIES LABELS "tools;threads")
# the scheduler of a turn's calls (waits, skips, cycles)
agentc_add_test(tools_callplan SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_callplan.c
  LIBS agentc_runtime LABELS tools)
# the State in stored sessions (snapshot part "state")
target_link_libraries(tools_run_state PRIVATE agentc_store)
# The tool-result cache: hits skip the process (a ledger), keys, TTL, scopes, contexts,
# eviction, metrics, callback tools, refusals, journals with hits replayed.
agentc_add_test(tools_run_cache SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_tools_cache.c
  LIBS agentc_runtime agentc_io agentc_test_replay agentc_test_httpd Threads::Threads LABELS tools)
# The result cache across SIGKILL and resume, with hits waiting; journals with hits replayed.
add_test(NAME tools_cache_kill
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/tools/cache_kill.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(tools_cache_kill PROPERTIES LABELS "tools;store;slow" SKIP_RETURN_CODE 77
  TIMEOUT 300 ENVIRONMENT AGENTC_KILL_TRIALS=30)
