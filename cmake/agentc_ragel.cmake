# agentc_ragel(OUT_VAR SOURCE.rl [FLAGS ...])
# Compiles a Ragel file into the build tree. Ragel runs from the source
# directory with relative paths, so its #line directives are the same in
# every checkout.
function(agentc_ragel out_var rl_file)
  cmake_parse_arguments(AR "" "" "FLAGS" ${ARGN})
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${rl_file})
  get_filename_component(name ${rl_file} NAME_WE)
  get_filename_component(dir ${rel} DIRECTORY)
  set(out ${AGENTC_GENERATED_DIR}/${dir}/${name}.c)
  file(MAKE_DIRECTORY ${AGENTC_GENERATED_DIR}/${dir})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${RAGEL_EXECUTABLE} ${AR_FLAGS} -o ${out} ${rel}
    # Ragel names its own output file in #line directives: make that path
    # relative too, so the generated C is the same in every build tree.
    COMMAND sed -i "s|${out}|${dir}/${name}.c|g" ${out}
    DEPENDS ${CMAKE_SOURCE_DIR}/${rel}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    COMMENT "Ragel ${rel}"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
