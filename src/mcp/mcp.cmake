# The MCP client (src/mcp) and its place among the engine's tools
# (src/session/tools_mcp.c), built into the runtime library.
target_sources(agentc_runtime PRIVATE
  ${CMAKE_SOURCE_DIR}/src/mcp/mcp_client.c
  ${CMAKE_SOURCE_DIR}/src/mcp/mcp_config.c
  ${CMAKE_SOURCE_DIR}/src/mcp/mcp_inbox.c
  ${CMAKE_SOURCE_DIR}/src/mcp/mcp_result.c
  ${CMAKE_SOURCE_DIR}/src/mcp/mcp_stdio.c
  ${CMAKE_SOURCE_DIR}/src/mcp/mcp_http.c
  ${CMAKE_SOURCE_DIR}/src/session/tools_mcp.c)
target_link_libraries(agentc_runtime PUBLIC agentc_llm_stream)
