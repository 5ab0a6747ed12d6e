# bench_roundtrip: client CPU per LLM round trip on loopback (engine, session, shared multi,
# SSE assembly) against a bare libcurl easy POST of the same bytes in the same run.
if(TARGET agentc_runtime AND TARGET agentc_llm_http AND TARGET agentc_test_httpd)
  add_executable(bench_roundtrip ${CMAKE_SOURCE_DIR}/bench/bench_roundtrip.c)
  target_link_libraries(bench_roundtrip PRIVATE agentc_runtime agentc_llm_http agentc_test_httpd
    PkgConfig::CURL PkgConfig::JANSSON)
endif()
