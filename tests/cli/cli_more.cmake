# End-to-end checks of agentc run/batch/diagram: the real binary against the
# loopback agentc_test_httpd server and the script provider. Exit 77 = skipped
# (a tool such as jq is missing).
foreach(t run_openai interrupt batch concurrency secrets output request_settings store state turns)
  add_test(NAME cli_${t}
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/${t}.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main>
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endforeach()
add_test(NAME cli_diagram
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/diagram.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_run_openai cli_interrupt cli_batch cli_concurrency cli_secrets cli_output cli_diagram
  cli_request_settings cli_store cli_turns PROPERTIES
  LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME cli_terminal
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/terminal.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_terminal PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME cli_decisions
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/decisions.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_decisions PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME cli_output_schema
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/output_schema.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_output_schema PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
# Durable sessions through the CLI: SIGKILL at random moments, then resume (bounded).
add_test(NAME cli_store_kill
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/store_kill.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_store_kill PROPERTIES LABELS "cli;store" SKIP_RETURN_CODE 77 TIMEOUT 400
  ENVIRONMENT AGENTC_KILL_TRIALS=100)
