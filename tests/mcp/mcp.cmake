# MCP client: against the reference servers from npm (pinned in tests/mcp/npm,
# installed into the build directory by the mcp_npm_setup fixture, the only step
# that needs the network) and against tests/mcp/test_server.js, a server that is
# well-behaved or hostile on demand. Tests skip (77) only when npm cannot install.
set(AGENTC_MCP_NPM_DIR ${CMAKE_BINARY_DIR}/mcp-npm)
add_test(NAME mcp_npm_setup
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/npm_setup.sh ${AGENTC_MCP_NPM_DIR})
set_tests_properties(mcp_npm_setup PROPERTIES FIXTURES_SETUP mcp_npm LABELS "mcp;cli"
  SKIP_RETURN_CODE 77 TIMEOUT 300)
foreach(t stdio http faults toolfile durable agent bounds cache)
  add_test(NAME mcp_${t}
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/${t}.sh $<TARGET_FILE:agentc> ${AGENTC_MCP_NPM_DIR}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(mcp_${t} PROPERTIES FIXTURES_REQUIRED mcp_npm LABELS "mcp;cli"
    SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
add_test(NAME mcp_list_changed
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/list_changed.sh $<TARGET_FILE:agentc> ${AGENTC_MCP_NPM_DIR}
          $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mcp_list_changed PROPERTIES FIXTURES_REQUIRED mcp_npm LABELS "mcp;cli"
  SKIP_RETURN_CODE 77 TIMEOUT 120)
agentc_add_test(mcp_unit SOURCES ${CMAKE_SOURCE_DIR}/tests/mcp/test_mcp_unit.c
  LIBS agentc_runtime LABELS mcp)
add_executable(mcp_conformance_client ${CMAKE_SOURCE_DIR}/tests/mcp/conformance_client.c)
target_link_libraries(mcp_conformance_client PRIVATE agentc_runtime)
add_test(NAME mcp_conformance
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mcp/conformance.sh $<TARGET_FILE:mcp_conformance_client>
          ${AGENTC_MCP_NPM_DIR}
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(mcp_conformance PROPERTIES FIXTURES_REQUIRED mcp_npm LABELS "mcp;cli"
  SKIP_RETURN_CODE 77 TIMEOUT 400)
# servers starting late, in time, never, killed mid-call: the session goes on and the loop's
# longest stall (a 1 ms timer) stays under 100 ms
agentc_add_test(mcp_start SOURCES ${CMAKE_SOURCE_DIR}/tests/mcp/test_mcp_start.c
  LIBS agentc_runtime agentc_io LABELS mcp)
