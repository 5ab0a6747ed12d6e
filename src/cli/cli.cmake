# The agentc command line.
add_executable(agentc
  ${CMAKE_SOURCE_DIR}/src/cli/main.c
  ${CMAKE_SOURCE_DIR}/src/cli/run.c
  ${CMAKE_SOURCE_DIR}/src/cli/replay.c
  ${CMAKE_SOURCE_DIR}/src/cli/tools_cmd.c
  ${CMAKE_SOURCE_DIR}/src/cli/store_cli.c
  ${CMAKE_SOURCE_DIR}/src/cli/sessions.c)
target_include_directories(agentc PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(agentc PRIVATE agentc_runtime agentc_gen)
if(TARGET agentc_store)
  target_link_libraries(agentc PRIVATE agentc_store)
endif()
# `agentc run` answering a session that waits for an outside event (--on, terminal).
target_sources(agentc PRIVATE ${CMAKE_SOURCE_DIR}/src/cli/run_wait.c)
