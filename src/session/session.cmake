# The runtime: dispatcher (src/fsm), engine and sessions (src/session), the
# built-in tables generated from spec/agent.fsm, and the scripted provider.
agentc_generate(TARGET agentc_spec_tables SPEC spec/agent.fsm)
add_library(agentc_runtime STATIC
  ${CMAKE_SOURCE_DIR}/src/fsm/dispatch.c
  ${CMAKE_SOURCE_DIR}/src/fsm/plan.c
  ${CMAKE_SOURCE_DIR}/src/session/engine.c
  ${CMAKE_SOURCE_DIR}/src/session/contracts.c
  ${CMAKE_SOURCE_DIR}/src/session/session.c
  ${CMAKE_SOURCE_DIR}/src/session/payload.c
  ${CMAKE_SOURCE_DIR}/src/session/turn.c
  ${CMAKE_SOURCE_DIR}/src/session/journal.c
  ${CMAKE_SOURCE_DIR}/src/session/replay.c
  ${CMAKE_SOURCE_DIR}/src/session/handlers.c
  ${CMAKE_SOURCE_DIR}/src/session/effects.c
  ${CMAKE_SOURCE_DIR}/src/session/tools_registry.c
  ${CMAKE_SOURCE_DIR}/src/session/tool_callback.c
  ${CMAKE_SOURCE_DIR}/src/session/client_tools.c
  ${CMAKE_SOURCE_DIR}/src/session/context_tools.c
  ${CMAKE_SOURCE_DIR}/src/session/tools_run.c
  ${CMAKE_SOURCE_DIR}/src/session/tool_cache.c
  ${CMAKE_SOURCE_DIR}/src/session/compact_importance.c
  ${CMAKE_SOURCE_DIR}/src/session/tool_env.c
  ${CMAKE_SOURCE_DIR}/src/session/toolkits.c
  ${CMAKE_SOURCE_DIR}/src/session/compact_effect.c
  ${CMAKE_SOURCE_DIR}/src/session/state.c
  ${CMAKE_SOURCE_DIR}/src/session/state_turn.c
  ${CMAKE_SOURCE_DIR}/src/session/snapshot.c
  ${CMAKE_SOURCE_DIR}/src/session/agent_record.c
  ${CMAKE_SOURCE_DIR}/src/session/subagent.c
  ${CMAKE_SOURCE_DIR}/src/session/handoff.c
  ${CMAKE_SOURCE_DIR}/src/session/store_hooks.c
  ${CMAKE_SOURCE_DIR}/src/session/callplan.c
  ${CMAKE_SOURCE_DIR}/src/session/decisions.c
  ${CMAKE_SOURCE_DIR}/src/llm/script.c)
target_include_directories(agentc_runtime PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(agentc_runtime PUBLIC agentc_spec_tables agentc_gen agentc_context agentc_tools_base agentc_io agentc_util
  PkgConfig::JANSSON PkgConfig::CURL Threads::Threads)
if(TARGET agentc_llm_http)
  target_link_libraries(agentc_runtime PUBLIC agentc_llm_http)
else()
  target_sources(agentc_runtime PRIVATE ${CMAKE_SOURCE_DIR}/src/llm/http_missing.c)
endif()
# Accessors for embedders' own handlers (tool calls, conversation).
target_sources(agentc_runtime PRIVATE ${CMAKE_SOURCE_DIR}/src/session/embed_api.c)
# The spec language v2 at run time: comparison guards, actions with arguments, timers,
# what a session waits for.
target_sources(agentc_runtime PRIVATE ${CMAKE_SOURCE_DIR}/src/session/spec_rt.c
  ${CMAKE_SOURCE_DIR}/src/session/guardrail.c
  ${CMAKE_SOURCE_DIR}/src/session/waiting.c)
