# The embedding example (examples/embed) built against the in-tree libraries,
# with the same tests its standalone project runs against an installed agentc.
if(TARGET agentc_runtime AND TARGET agentc-gen)
  agentc_generate(TARGET embed_approval_tables SPEC examples/embed/approval.fsm)
  add_executable(embed_approval ${CMAKE_SOURCE_DIR}/examples/embed/main.c)
  target_link_libraries(embed_approval PRIVATE embed_approval_tables agentc_runtime)
  target_compile_definitions(embed_approval PRIVATE
    EMBED_DEFAULT_SCRIPT="${CMAKE_SOURCE_DIR}/examples/embed/approval.jsonl")
  foreach(mode approve deny)
    add_test(NAME embed_${mode}
      COMMAND ${CMAKE_COMMAND} -DPROG=$<TARGET_FILE:embed_approval> -DMODE=${mode}
              -DSCRIPT=${CMAKE_SOURCE_DIR}/examples/embed/approval.jsonl
              -P ${CMAKE_SOURCE_DIR}/examples/embed/check_output.cmake
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(embed_${mode} PROPERTIES LABELS examples TIMEOUT 120)
  endforeach()
endif()
