# agentc_test_httpd: the standalone loopback OpenAI-compatible server that the
# CLI tests and the batch benchmark run the real agentc binary against.
add_executable(agentc_test_httpd_main ${CMAKE_SOURCE_DIR}/tests/support/test_httpd_main.c)
set_target_properties(agentc_test_httpd_main PROPERTIES OUTPUT_NAME agentc_test_httpd)
target_link_libraries(agentc_test_httpd_main PRIVATE PkgConfig::JANSSON Threads::Threads)
