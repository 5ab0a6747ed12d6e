# End-to-end checks of agentc run/batch/diagram: the real binary against the
# loopback agentc_test_httpd server and the script provider. Exit 77 = skipped
# (a tool such as jq is missing).
foreach(t run_openai interrupt batch concurrency secrets output request_settings store state
    agent_memory agent_change agents turns thread_repro otel otel_context metrics cost compose guardrails)
  add_test(NAME cli_${t}
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/${t}.sh $<TARGET_FILE:agentc>
            $<TARGET_FILE:agentc_test_httpd_main>
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endforeach()
add_test(NAME cli_diagram
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/diagram.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_run_openai cli_interrupt cli_batch cli_concurrency cli_secrets cli_output cli_diagram
  cli_request_settings cli_store cli_agent_memory cli_agent_change cli_agents cli_turns cli_thread_repro
  cli_otel cli_otel_context cli_metrics cli_cost cli_compose cli_guardrails PROPERTIES
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
# agentc sessions list/show/prune/export on a real store (script provider).
add_test(NAME cli_sessions
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/sessions.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_sessions PROPERTIES LABELS "cli;store" SKIP_RETURN_CODE 77 TIMEOUT 120)
# Durable sessions through the CLI: SIGKILL at random moments, then resume (bounded).
add_test(NAME cli_store_kill
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/store_kill.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_store_kill PROPERTIES LABELS "cli;store" SKIP_RETURN_CODE 77 TIMEOUT 400
  ENVIRONMENT AGENTC_KILL_TRIALS=100)
# The agent format (src/cli/agent.h): refusals, records without secrets, records that
# rebuild their engine once the files are gone, diffs, overrides, --agents FILE.
agentc_add_test(cli_agent
  SOURCES ${CMAKE_SOURCE_DIR}/tests/cli/test_agent.c ${CMAKE_SOURCE_DIR}/src/cli/agent.c
          ${CMAKE_SOURCE_DIR}/src/cli/agent_record.c ${CMAKE_SOURCE_DIR}/src/cli/agents_file.c
          ${CMAKE_SOURCE_DIR}/src/cli/engine_opts.c
          ${CMAKE_SOURCE_DIR}/src/cli/tracing.c
  LIBS agentc_runtime agentc_gen
  LABELS cli)
target_include_directories(cli_agent PRIVATE ${CMAKE_SOURCE_DIR}/src/cli ${CMAKE_SOURCE_DIR}/src)
# agentc sessions fork at each turn of a 4-turn session with tool calls, a toolkit and the State.
add_test(NAME cli_fork
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/fork.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_fork PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 120)
# agentc coverage: transitions taken by journals and stored sessions, matched by identity.
add_test(NAME cli_coverage
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/coverage.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_coverage PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
# agentc testgen: generated scenarios run through the engine on spec/agent.fsm, the gallery and a
# spec written for the test (about a minute: slow).
add_test(NAME cli_testgen
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/testgen.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_testgen PROPERTIES LABELS "cli;slow" SKIP_RETURN_CODE 77 TIMEOUT 600)
# agentc run --post-at: events posted as states are entered (a pause, a queued message, a deny).
add_test(NAME cli_post_at
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/post_at.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_post_at PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 60)
# agentc coverage --fail-under over the journals every CLI test keeps (tests/cli/lib.sh): runs
# after all the other tests (CMakeLists.txt gives it their names as DEPENDS).
add_test(NAME cli_suite_coverage
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/suite_coverage.sh $<TARGET_FILE:agentc> 93
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_suite_coverage PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME cli_testgen_mutations
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/testgen_mutations.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_testgen_mutations PROPERTIES LABELS "cli;slow" SKIP_RETURN_CODE 77 TIMEOUT 900)
# The docs' offline examples as written: the README's serve example and durable sessions' lines,
# every route of docs/serve.md's API table, spec-language.md's first spec, the inline commands on
# the shipped spec and the demo's journal, every tool/MCP/toolkit/agents file the docs show.
add_test(NAME cli_doc_examples
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/doc_examples.sh $<TARGET_FILE:agentc>
          $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_doc_examples PROPERTIES LABELS "cli;examples" SKIP_RETURN_CODE 77 TIMEOUT 120)
# Byte-identity of journals, store rows and SSE frames on the scripted answers, the gallery
# and the recorded provider streams against tests/cli/baseline/ (byte_baseline.sh --update
# rewrites them).
add_test(NAME cli_byte_baseline
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/byte_baseline.sh $<TARGET_FILE:agentc>
          $<TARGET_FILE:agentc_test_httpd_main>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(cli_byte_baseline PROPERTIES LABELS cli SKIP_RETURN_CODE 77 TIMEOUT 120)
