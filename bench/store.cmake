# bench_store: journal appends of stored sessions while streaming against bare sqlite3 inserts,
# bytes per turn of a long conversation, load from snapshot + tail against a full replay.
if(TARGET agentc_store AND TARGET agentc_llm_http AND TARGET agentc_test_httpd)
  add_executable(bench_store ${CMAKE_SOURCE_DIR}/bench/bench_store.c)
  target_link_libraries(bench_store PRIVATE agentc_store agentc_runtime agentc_llm_http agentc_test_httpd
                        PkgConfig::SQLITE3)
endif()
