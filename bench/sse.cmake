# bench_sse: SSE scanner and stream assembly throughput against a memchr baseline.
add_executable(bench_sse ${CMAKE_SOURCE_DIR}/bench/bench_sse.c)
target_link_libraries(bench_sse PRIVATE agentc_llm_stream)
