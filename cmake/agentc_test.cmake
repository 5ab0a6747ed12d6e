# agentc_add_test(NAME SOURCES src... [LIBS lib...] [ARGS arg...] [LABELS l...])
# A cmocka test executable registered with ctest.
function(agentc_add_test name)
  cmake_parse_arguments(AT "" "" "SOURCES;LIBS;ARGS;LABELS" ${ARGN})
  add_executable(${name} ${AT_SOURCES})
  target_link_libraries(${name} PRIVATE ${AT_LIBS} PkgConfig::CMOCKA)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)
  add_test(NAME ${name} COMMAND ${name} ${AT_ARGS} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  if(AT_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${AT_LABELS}")
  endif()
endfunction()

# agentc_fuzz_seeds(DIR file...): copies each file to DIR/seed_<k><ext> at
# configure time (a libFuzzer seed corpus made of the tree's files).
function(agentc_fuzz_seeds dir)
  file(MAKE_DIRECTORY ${dir})
  set(k 0)
  foreach(f ${ARGN})
    math(EXPR k "${k} + 1")
    get_filename_component(ext ${f} LAST_EXT)
    configure_file(${f} ${dir}/seed_${k}${ext} COPYONLY)
  endforeach()
endfunction()
