# Tools run through a real engine on a real loop with the scripted provider:
# parallel calls, argument validation, child process outcomes, callback tools,
# the internal context tools and the State (references, output paths, plans).
foreach(t parallel args proc callback internal state subagent)
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
