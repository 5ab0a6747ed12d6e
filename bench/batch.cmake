# The floor bench_batch compares with: a bare libcurl-multi client (bench_floor.c).
add_executable(bench_floor ${CMAKE_SOURCE_DIR}/bench/bench_floor.c)
target_link_libraries(bench_floor PRIVATE PkgConfig::CURL)
# Batch benchmark (not a test): cmake --build BUILD --target bench_batch
# Runs agentc batch against the loopback agentc_test_httpd (tests/support).
if(TARGET agentc AND TARGET agentc_test_httpd_main)
  add_custom_target(bench_batch
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_batch.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main> 1000 200 $<TARGET_FILE:bench_floor>
    DEPENDS agentc agentc_test_httpd_main bench_floor
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
# Peak RSS of 1,000 sessions streaming at once (not a test): bench_inflight
if(TARGET agentc AND TARGET agentc_test_httpd_main)
  add_custom_target(bench_inflight
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_inflight.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main> 1000
    DEPENDS agentc agentc_test_httpd_main
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
# The durable store's cost in a batch, stored vs unstored alternated (not a test)
if(TARGET agentc AND TARGET agentc_test_httpd_main)
  add_custom_target(bench_batch_store
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_batch_store.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main> 500 100 5
    DEPENDS agentc agentc_test_httpd_main
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
# The peer benchmark (not a test): agentc batch against LangGraph.js and the OpenAI Agents SDK
# for JS on the same workload; installs the pinned peers (bench/peers) into BUILD/peers first.
if(TARGET agentc AND TARGET agentc_test_httpd_main)
  add_custom_target(bench_peers
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_peers.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main> ${CMAKE_BINARY_DIR}/peers 1000 200 5
    DEPENDS agentc agentc_test_httpd_main
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
# Auditing a spec (not a test): bench_testgen: testgen on spec/agent.fsm and a 200-state spec,
# coverage over 10,000 stored sessions.
if(TARGET agentc)
  add_custom_target(bench_testgen
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_testgen.sh $<TARGET_FILE:agentc> 10000
    DEPENDS agentc
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
