# The spec compiler: a library (also linked into the agentc CLI and the
# runtime, for `agentc run --spec FILE`) and the bootstrap generator.
agentc_ragel(AGENTC_LEXER_C gen/lexer.rl FLAGS -T0)
add_library(agentc_gen STATIC
  ${AGENTC_LEXER_C}
  ${CMAKE_SOURCE_DIR}/gen/parser.c
  ${CMAKE_SOURCE_DIR}/gen/check.c
  ${CMAKE_SOURCE_DIR}/gen/sugar.c
  ${CMAKE_SOURCE_DIR}/gen/leave.c
  ${CMAKE_SOURCE_DIR}/gen/decisions.c
  ${CMAKE_SOURCE_DIR}/gen/lower.c
  ${CMAKE_SOURCE_DIR}/gen/emit_c.c
  ${CMAKE_SOURCE_DIR}/gen/emit_diagram.c
  ${CMAKE_SOURCE_DIR}/gen/contract.c
  ${CMAKE_SOURCE_DIR}/gen/gen_cli.c)
target_include_directories(agentc_gen PUBLIC ${CMAKE_SOURCE_DIR}/gen ${CMAKE_SOURCE_DIR}/include)
# Durations in param values are read by src/util/units.c, as in tool files.
target_link_libraries(agentc_gen PUBLIC agentc_util)
# Ragel's output has unused-variable patterns we do not control.
set_source_files_properties(${AGENTC_LEXER_C} PROPERTIES COMPILE_OPTIONS "-Wno-unused-const-variable;-Wno-implicit-fallthrough")

add_executable(agentc-gen ${CMAKE_SOURCE_DIR}/gen/gen_main.c)
target_link_libraries(agentc-gen PRIVATE agentc_gen)

include(${CMAKE_SOURCE_DIR}/cmake/agentc_generate.cmake)
