# Tests for agentc_tools_base: schema validator (unit + JSON-Schema-Test-Suite),
# tool files and the calculator; libFuzzer targets under AGENTC_FUZZ.
set(AGENTC_JSON_SCHEMA_SUITE /usr/share/json-schema-test-suite/tests
    CACHE PATH "tests/ folder of the JSON-Schema-Test-Suite")

agentc_add_test(tools_schema_suite
  SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_schema_suite.c
  LIBS agentc_tools_base
  ARGS ${AGENTC_JSON_SCHEMA_SUITE}
  LABELS tools)
agentc_add_test(tools_schema
  SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_schema.c
  LIBS agentc_tools_base
  LABELS tools)
agentc_add_test(tools_toolfile
  SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_toolfile.c
  LIBS agentc_tools_base
  LABELS tools)
# Context filters: each step, chains, declarations, typing (tools/ctxfilter.h).
agentc_add_test(tools_ctxfilter
  SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_ctxfilter.c
  LIBS agentc_tools_base
  LABELS tools)
# State references: grammar, lookups, ||, &&, escapes, writes (docs/state.md).
agentc_add_test(tools_stateref
  SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_stateref.c
  LIBS agentc_tools_base
  LABELS tools)
agentc_add_test(tools_calc
  SOURCES ${CMAKE_SOURCE_DIR}/tests/tools/test_calculator.c
  LIBS agentc_tools_base
  LABELS tools)

if(AGENTC_FUZZ)
  # The library sources are compiled into each target so that libFuzzer's
  # coverage instrumentation reaches them.
  set(_tools_base_srcs
    ${CMAKE_SOURCE_DIR}/src/tools/schema.c
    ${CMAKE_SOURCE_DIR}/src/tools/schema_regex.c
    ${CMAKE_SOURCE_DIR}/src/tools/toolfile.c
    ${CMAKE_SOURCE_DIR}/src/tools/toolfile_agents.c
    ${CMAKE_SOURCE_DIR}/src/tools/toolkit_file.c
    ${CMAKE_SOURCE_DIR}/src/tools/toolkit_check.c
    ${CMAKE_SOURCE_DIR}/src/tools/ctxfilter.c
    ${CMAKE_SOURCE_DIR}/src/tools/ctxfilter_check.c
    ${CMAKE_SOURCE_DIR}/src/tools/stateref.c
    ${CMAKE_SOURCE_DIR}/src/util/buf.c
    ${CMAKE_SOURCE_DIR}/src/util/grow.c
    ${CMAKE_SOURCE_DIR}/src/util/units.c
    ${CMAKE_SOURCE_DIR}/src/util/toolname.c
    ${CMAKE_SOURCE_DIR}/src/tools/calculator.c)
  foreach(fz fuzz_schema fuzz_calc fuzz_stateref)
    add_executable(${fz} ${CMAKE_SOURCE_DIR}/tests/fuzz/${fz}.c ${_tools_base_srcs})
    target_include_directories(${fz} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
    target_compile_options(${fz} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${fz} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${fz} PRIVATE PkgConfig::JANSSON PkgConfig::PCRE2 m)
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/${fz}_corpus)
    add_test(NAME ${fz}_30s
      COMMAND ${fz} -max_total_time=30 -rss_limit_mb=1024 -timeout=10 ${CMAKE_BINARY_DIR}/${fz}_corpus
      WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
    set_tests_properties(${fz}_30s PROPERTIES LABELS "tools;fuzz" TIMEOUT 120)
  endforeach()
endif()
