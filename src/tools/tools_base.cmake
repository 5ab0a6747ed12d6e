# agentc_tools_base: JSON Schema validator, tool-file parser and the built-in
# exact calculator (unit parsing is in src/util). Depends on jansson only.
add_library(agentc_tools_base STATIC
  ${CMAKE_SOURCE_DIR}/src/tools/schema.c
  ${CMAKE_SOURCE_DIR}/src/tools/schema_regex.c
  ${CMAKE_SOURCE_DIR}/src/tools/toolfile.c
  ${CMAKE_SOURCE_DIR}/src/tools/toolfile_agents.c
  ${CMAKE_SOURCE_DIR}/src/tools/toolkit_file.c
  ${CMAKE_SOURCE_DIR}/src/tools/toolkit_check.c
  ${CMAKE_SOURCE_DIR}/src/tools/ctxfilter.c
  ${CMAKE_SOURCE_DIR}/src/tools/ctxfilter_check.c
  ${CMAKE_SOURCE_DIR}/src/tools/stateref.c
  ${CMAKE_SOURCE_DIR}/src/tools/calculator.c)
target_include_directories(agentc_tools_base PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(agentc_tools_base PUBLIC agentc_util PkgConfig::JANSSON PkgConfig::PCRE2 m)
