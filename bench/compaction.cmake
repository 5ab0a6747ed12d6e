# Fact retention of the compaction strategies (not a test):
#   cmake --build BUILD --target bench_compaction && BUILD/bench_compaction [threshold] [keep]
# (from the repository root: it reads spec/agent.fsm). 200 turns against a scripted model on
# loopback HTTP, 20 planted facts; prints a table of the facts each strategy keeps.
if(TARGET agentc_test_httpd)
  add_executable(bench_compaction ${CMAKE_SOURCE_DIR}/bench/bench_compaction.c)
  target_link_libraries(bench_compaction PRIVATE agentc_runtime agentc_test_httpd)
  target_include_directories(bench_compaction PRIVATE ${CMAKE_SOURCE_DIR}/gen ${CMAKE_SOURCE_DIR}/bench)
endif()
