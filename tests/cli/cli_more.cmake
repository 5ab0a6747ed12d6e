# End-to-end checks of agentc run/batch/diagram: the real binary against the
# loopback agentc_test_httpd server and the script provider. Exit 77 = skipped
# (a tool such as jq is missing).
foreach(t run_openai interrupt batch concurrency secrets output request_settings state)
  add_test(NAME cli_${t}
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/${t}.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main>
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endforeach()
add_test(NAME cli_diagram
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/diagram.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_run_openai cli_interrupt cli_batch cli_concurrency cli_secrets cli_output cli_diagram
  cli_request_settings PROPERTIES
  LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME cli_terminal
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/terminal.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_terminal PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME cli_output_schema
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/output_schema.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_output_schema PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
