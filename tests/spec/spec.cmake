# Spec diagnostics as data: every tests/spec/invalid/<case>/input.fsm is
# checked with agentc-gen and its stderr compared with <case>/expected
# (exit status 1 for errors, 0 for warnings only); every
# tests/spec/valid/*.fsm must check clean with no diagnostics at all.
find_program(AGENTC_BASH bash)
if(AGENTC_BASH)
  file(GLOB spec_invalid_cases LIST_DIRECTORIES true ${CMAKE_SOURCE_DIR}/tests/spec/invalid/*)
  list(SORT spec_invalid_cases)
  foreach(case_dir ${spec_invalid_cases})
    if(IS_DIRECTORY ${case_dir} AND EXISTS ${case_dir}/input.fsm)
      get_filename_component(case ${case_dir} NAME)
      add_test(NAME spec_invalid_${case}
        COMMAND ${AGENTC_BASH} tests/spec/run_case.sh $<TARGET_FILE:agentc-gen>
                tests/spec/invalid/${case}/input.fsm tests/spec/invalid/${case}/expected
        WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
      set_tests_properties(spec_invalid_${case} PROPERTIES LABELS "spec")
    endif()
  endforeach()

  file(GLOB spec_valid_cases ${CMAKE_SOURCE_DIR}/tests/spec/valid/*.fsm)
  list(SORT spec_valid_cases)
  foreach(spec ${spec_valid_cases})
    get_filename_component(case ${spec} NAME_WE)
    add_test(NAME spec_valid_${case}
      COMMAND ${AGENTC_BASH} tests/spec/run_valid.sh $<TARGET_FILE:agentc-gen>
              tests/spec/valid/${case}.fsm
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(spec_valid_${case} PROPERTIES LABELS "spec")
  endforeach()
endif()
