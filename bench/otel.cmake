# What tracing costs a batch, traced vs untraced alternated (not a test): bench_otel
if(TARGET agentc AND TARGET agentc_test_httpd_main)
  add_custom_target(bench_otel
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_otel.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main> 1000 200 5
    DEPENDS agentc agentc_test_httpd_main
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
