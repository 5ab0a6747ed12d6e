# Every test that may run node (labels mcp, server or node) runs the node pinned in tests/node,
# never the machine's: the node_setup fixture installs it into the build directory (npm is only
# the means of fetching it) and those tests get its bin folder first in their PATH, so their
# scripts and the MCP servers agentc starts keep calling plain `node`.
set(AGENTC_NODE_DIR ${CMAKE_BINARY_DIR}/node)
add_test(NAME node_setup COMMAND bash ${CMAKE_SOURCE_DIR}/tests/node/setup.sh ${AGENTC_NODE_DIR})
set_tests_properties(node_setup PROPERTIES FIXTURES_SETUP node LABELS node TIMEOUT 450)
# The wiring itself: a test's `node` is the installed one.
add_test(NAME node_pinned COMMAND sh -c "test \"$(command -v node)\" = \"$1/bin/node\" && node --version"
                                  node_pinned ${AGENTC_NODE_DIR})
set_tests_properties(node_pinned PROPERTIES LABELS node TIMEOUT 30)

get_property(agentc_node_tests DIRECTORY PROPERTY TESTS)
foreach(t ${agentc_node_tests})
  get_test_property(${t} LABELS labels)
  if(t STREQUAL node_setup OR NOT labels MATCHES "(^|;)(mcp|server|node)(;|$)")
    continue()
  endif()
  set_property(TEST ${t} APPEND PROPERTY FIXTURES_REQUIRED node)
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.22)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT_MODIFICATION
                 "PATH=path_list_prepend:${AGENTC_NODE_DIR}/bin")
  else()
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "PATH=${AGENTC_NODE_DIR}/bin:$ENV{PATH}")
  endif()
endforeach()
