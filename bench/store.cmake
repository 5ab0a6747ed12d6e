# bench_store: journal appends of stored sessions while streaming against bare sqlite3 inserts,
# bytes per turn of a long conversation, load from snapshot + tail against a full replay.
if(TARGET agentc_store AND TARGET agentc_llm_http AND TARGET agentc_test_httpd)
  add_executable(bench_store ${CMAKE_SOURCE_DIR}/bench/bench_store.c)
  target_link_libraries(bench_store PRIVATE agentc_store agentc_runtime agentc_llm_http agentc_test_httpd
                        PkgConfig::SQLITE3)
endif()
# bench_pg_append: journal events appended per second by group commits on the loop, two stores
# (PostgreSQL and SQLite) alternated in one run. bench_pg (not a test): it, and CPU per turn of
# agentc batch stored on PostgreSQL (agentc and the server together) against SQLite, on a
# throwaway cluster (tests/store/pg_cluster.sh).
if(TARGET agentc_store)
  add_executable(bench_pg_append ${CMAKE_SOURCE_DIR}/bench/bench_pg_append.c)
  target_link_libraries(bench_pg_append PRIVATE agentc_store agentc_runtime agentc_io)
  target_include_directories(bench_pg_append PRIVATE ${CMAKE_SOURCE_DIR}/src)
endif()
if(TARGET agentc AND TARGET agentc_test_httpd_main AND TARGET bench_pg_append)
  add_custom_target(bench_pg
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_pg.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main> $<TARGET_FILE:bench_pg_append>
    DEPENDS agentc agentc_test_httpd_main bench_pg_append
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
