# CLI-level checks run against the built agentc binary.
add_test(NAME cli_readme_diagram
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/readme_diagram.sh $<TARGET_FILE:agentc> README.md
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
# The README's link lines (pkg-config, shared and static) against an installed tree.
# An instrumented tree links only into a program built with the same instrumentation.
set(readme_link_flags "")
if(AGENTC_SANITIZE)
  set(readme_link_flags "-fsanitize=address,undefined")
elseif(AGENTC_TSAN)
  set(readme_link_flags "-fsanitize=thread")
endif()
add_test(NAME cli_readme_link
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/readme_link.sh ${CMAKE_BINARY_DIR} "${readme_link_flags}"
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_readme_link PROPERTIES LABELS "cli;examples" SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME cli_demo_replay
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/demo_replay.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
add_test(NAME cli_contracts
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/contracts.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_contracts PROPERTIES LABELS cli TIMEOUT 60)
add_test(NAME cli_check_handlers
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/check_handlers.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_check_handlers PROPERTIES LABELS cli TIMEOUT 120)
add_test(NAME cli_tool_paths
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/tool_paths.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_tool_paths PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME cli_toolkits_check
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/toolkits_check.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_toolkits_check PROPERTIES LABELS cli TIMEOUT 60)
add_test(NAME cli_toolkits_store
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/toolkits_store.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_toolkits_store PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME cli_gallery
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/gallery.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_gallery PROPERTIES LABELS cli TIMEOUT 120)
# Every option a command accepts is in its --help and in the docs, and every one they name is accepted.
add_test(NAME cli_help_flags
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/help_flags.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_help_flags PROPERTIES LABELS "cli;slow" TIMEOUT 300)
