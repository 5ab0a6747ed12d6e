# Batch benchmark (not a test): cmake --build BUILD --target bench_batch
# Runs agentc batch against the loopback agentc_test_httpd (tests/support).
if(TARGET agentc AND TARGET agentc_test_httpd_main)
  add_custom_target(bench_batch
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_batch.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main>
    DEPENDS agentc agentc_test_httpd_main
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
