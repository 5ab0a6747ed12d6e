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
