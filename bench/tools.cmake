# Tool and compaction benchmark (not a test): make bench_tools && ./bench_tools [runs]
add_executable(bench_tools ${CMAKE_SOURCE_DIR}/bench/bench_tools.c)
target_link_libraries(bench_tools PRIVATE agentc_runtime agentc_io)
# Request building at 10 / 100 / 1,000 messages: ./bench_request [runs]
add_executable(bench_request ${CMAKE_SOURCE_DIR}/bench/bench_request.c)
target_link_libraries(bench_request PRIVATE agentc_context)
# Sub-agent calls nested 1..4 levels against the same model calls inline:
# ./bench_subagent [runs] [--store] (--store: every session, children too, in an SQLite store)
add_executable(bench_subagent ${CMAKE_SOURCE_DIR}/bench/bench_subagent.c)
target_link_libraries(bench_subagent PRIVATE agentc_store agentc_runtime agentc_io)
