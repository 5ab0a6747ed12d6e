# bench_journal: client CPU per streamed delta with and without a session journal (fresh session
# per round trip against the loopback scripted server, the two modes alternated in one run).
if(TARGET agentc_runtime AND TARGET agentc_llm_http AND TARGET agentc_test_httpd)
  add_executable(bench_journal ${CMAKE_SOURCE_DIR}/bench/bench_journal.c)
  target_link_libraries(bench_journal PRIVATE agentc_runtime agentc_llm_http agentc_test_httpd)
endif()
