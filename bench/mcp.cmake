# bench_mcp: an MCP tools/call round trip over stdio to a trivial server vs one external
# tool process spawn, in one run. Run: build/bench_mcp [calls-per-round] [rounds]
if(TARGET agentc_runtime)
  add_executable(bench_mcp_server ${CMAKE_SOURCE_DIR}/bench/mcp_trivial_server.c)
  target_link_libraries(bench_mcp_server PRIVATE PkgConfig::JANSSON)
  add_executable(bench_mcp ${CMAKE_SOURCE_DIR}/bench/bench_mcp.c)
  target_link_libraries(bench_mcp PRIVATE agentc_runtime agentc_io)
  target_compile_definitions(bench_mcp PRIVATE
    AGENTC_BENCH_MCP_SERVER="$<TARGET_FILE:bench_mcp_server>")
  add_dependencies(bench_mcp bench_mcp_server)
endif()
# bench_mcp_stall: the loop's longest stall while MCP servers start, crash and are stopped, and
# how long ac_engine_add_tools holds its caller (tests/mcp/test_server.js; node needed).
# Run: build/bench_mcp_stall [rounds]
if(TARGET agentc_runtime)
  add_executable(bench_mcp_stall ${CMAKE_SOURCE_DIR}/bench/bench_mcp_stall.c)
  target_link_libraries(bench_mcp_stall PRIVATE agentc_runtime agentc_io)
  target_compile_definitions(bench_mcp_stall PRIVATE
    AGENTC_BENCH_TEST_SERVER="${CMAKE_SOURCE_DIR}/tests/mcp/test_server.js")
endif()
# bench_mcp_tools: registering the tools of an MCP server that lists N of them (1,000, 5,000,
# 20,000 by default): time to registered, the loop's longest stall, a session's creation.
# Run: build/bench_mcp_tools [N ...]
if(TARGET agentc_runtime)
  add_executable(bench_mcp_tools ${CMAKE_SOURCE_DIR}/bench/bench_mcp_tools.c)
  target_link_libraries(bench_mcp_tools PRIVATE agentc_runtime agentc_io)
  target_compile_definitions(bench_mcp_tools PRIVATE
    AGENTC_BENCH_MCP_SERVER="$<TARGET_FILE:bench_mcp_server>")
  add_dependencies(bench_mcp_tools bench_mcp_server)
endif()
