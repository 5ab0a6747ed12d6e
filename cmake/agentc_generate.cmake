# agentc_generate(TARGET name SPEC path/to/x.fsm [GENERATOR exe] [OUTPUT_DIR dir])
#
# Generates x_fsm.h / x_fsm.c from a spec and exposes them as a static
# library target `name` (link it, include "x_fsm.h"). The tables are
# regenerated whenever the spec or the generator changes. The generator
# runs from the spec's project root with a relative path, so the output is
# identical in every checkout.
function(agentc_generate)
  cmake_parse_arguments(AG "" "TARGET;SPEC;GENERATOR;OUTPUT_DIR" "" ${ARGN})
  if(NOT AG_TARGET OR NOT AG_SPEC)
    message(FATAL_ERROR "agentc_generate: TARGET and SPEC are required")
  endif()
  if(NOT AG_GENERATOR)
    if(TARGET agentc-gen)
      set(AG_GENERATOR agentc-gen)
    elseif(TARGET agentc::agentc-gen)
      set(AG_GENERATOR agentc::agentc-gen)
    else()
      message(FATAL_ERROR "agentc_generate: no generator (build agentc-gen or find_package(agentc))")
    endif()
  endif()
  get_filename_component(spec_abs ${AG_SPEC} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  get_filename_component(name ${spec_abs} NAME_WE)
  if(NOT AG_OUTPUT_DIR)
    set(AG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/${AG_TARGET}_generated)
  endif()
  file(MAKE_DIRECTORY ${AG_OUTPUT_DIR})
  file(RELATIVE_PATH spec_rel ${CMAKE_SOURCE_DIR} ${spec_abs})
  add_custom_command(
    OUTPUT ${AG_OUTPUT_DIR}/${name}_fsm.h ${AG_OUTPUT_DIR}/${name}_fsm.c
    COMMAND ${AG_GENERATOR} gen ${spec_rel} -o ${AG_OUTPUT_DIR} --spec-path ${spec_rel}
    DEPENDS ${spec_abs} ${AG_GENERATOR}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    COMMENT "agentc gen ${spec_rel}"
    VERBATIM)
  add_library(${AG_TARGET} STATIC ${AG_OUTPUT_DIR}/${name}_fsm.c)
  target_include_directories(${AG_TARGET} PUBLIC ${AG_OUTPUT_DIR})
  if(TARGET agentc_headers)
    target_link_libraries(${AG_TARGET} PUBLIC agentc_headers)
  elseif(TARGET agentc::headers)
    target_link_libraries(${AG_TARGET} PUBLIC agentc::headers)
  endif()
endfunction()
