# The agentc command line.
add_executable(agentc
  ${CMAKE_SOURCE_DIR}/src/cli/main.c
  ${CMAKE_SOURCE_DIR}/src/cli/engine_opts.c
  ${CMAKE_SOURCE_DIR}/src/cli/tracing.c
  ${CMAKE_SOURCE_DIR}/src/cli/agent.c
  ${CMAKE_SOURCE_DIR}/src/cli/agent_record.c
  ${CMAKE_SOURCE_DIR}/src/cli/agents_file.c
  ${CMAKE_SOURCE_DIR}/src/cli/run_common.c
  ${CMAKE_SOURCE_DIR}/src/cli/run_opts.c
  ${CMAKE_SOURCE_DIR}/src/cli/run_ui.c
  ${CMAKE_SOURCE_DIR}/src/cli/post_at.c
  ${CMAKE_SOURCE_DIR}/src/cli/run.c
  ${CMAKE_SOURCE_DIR}/src/cli/run_agent.c
  ${CMAKE_SOURCE_DIR}/src/cli/subagents.c
  ${CMAKE_SOURCE_DIR}/src/cli/agents_diagram.c
  ${CMAKE_SOURCE_DIR}/src/cli/resume.c
  ${CMAKE_SOURCE_DIR}/src/cli/demo.c
  ${CMAKE_SOURCE_DIR}/src/cli/batch.c
  ${CMAKE_SOURCE_DIR}/src/cli/replay.c
  ${CMAKE_SOURCE_DIR}/src/cli/coverage.c
  ${CMAKE_SOURCE_DIR}/src/cli/testgen.c
  ${CMAKE_SOURCE_DIR}/src/cli/testgen_alpha.c
  ${CMAKE_SOURCE_DIR}/src/cli/testgen_emit.c
  ${CMAKE_SOURCE_DIR}/src/cli/testgen_posts.c
  ${CMAKE_SOURCE_DIR}/src/cli/testgen_reach.c
  ${CMAKE_SOURCE_DIR}/src/cli/testgen_run.c
  ${CMAKE_SOURCE_DIR}/src/cli/testgen_search.c
  ${CMAKE_SOURCE_DIR}/src/cli/tools_cmd.c
  ${CMAKE_SOURCE_DIR}/src/cli/store_cli.c
  ${CMAKE_SOURCE_DIR}/src/cli/store_copy.c
  ${CMAKE_SOURCE_DIR}/src/cli/sessions.c
  ${CMAKE_SOURCE_DIR}/src/cli/sessions_prune.c
  ${CMAKE_SOURCE_DIR}/src/cli/sessions_fork.c
  ${CMAKE_SOURCE_DIR}/src/cli/serve.c
  ${CMAKE_SOURCE_DIR}/src/cli/serve_agents.c)
target_include_directories(agentc PRIVATE ${CMAKE_SOURCE_DIR}/src/cli)
target_link_libraries(agentc PRIVATE agentc_runtime agentc_gen agentc_server)
if(TARGET agentc_store)
  target_link_libraries(agentc PRIVATE agentc_store)
endif()
# `agentc run` answering a session that waits for an outside event (--on, terminal).
target_sources(agentc PRIVATE ${CMAKE_SOURCE_DIR}/src/cli/run_wait.c)
