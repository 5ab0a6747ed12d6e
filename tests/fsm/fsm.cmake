# Tests of the table-driven dispatcher, driven with small specs compiled in-process.
agentc_add_test(fsm_dispatch SOURCES ${CMAKE_SOURCE_DIR}/tests/fsm/test_dispatch.c
  LIBS agentc_runtime agentc_gen LABELS fsm)
# Allocation counting by link-time wrapping of malloc/calloc/realloc.
agentc_add_test(fsm_dispatch_noalloc SOURCES ${CMAKE_SOURCE_DIR}/tests/fsm/test_dispatch_noalloc.c
  LIBS agentc_runtime LABELS fsm)
target_link_options(fsm_dispatch_noalloc PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc)
# The real dispatcher (dense index or row scan, traced or not) against a plain
# reference, call for call, on every spec of the tree.
file(GLOB diff_specs RELATIVE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/tests/spec/valid/*.fsm
     ${CMAKE_SOURCE_DIR}/tests/gen/golden/*.fsm ${CMAKE_SOURCE_DIR}/examples/embed/*.fsm
     ${CMAKE_SOURCE_DIR}/examples/specs/*.fsm)
list(SORT diff_specs)
agentc_add_test(fsm_dispatch_diff SOURCES ${CMAKE_SOURCE_DIR}/tests/fsm/test_dispatch_diff.c
  ${CMAKE_SOURCE_DIR}/tests/fsm/diff_driver.c ${CMAKE_SOURCE_DIR}/tests/fsm/ref_dispatch.c
  LIBS agentc_runtime agentc_gen ARGS spec/agent.fsm ${diff_specs} LABELS fsm)

# libFuzzer target (clang only): random specs through the same comparison.
if(AGENTC_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang" AND TARGET agentc_gen_fuzz)
  add_executable(fuzz_dispatch ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_dispatch.c
    ${CMAKE_SOURCE_DIR}/tests/fsm/diff_driver.c ${CMAKE_SOURCE_DIR}/tests/fsm/ref_dispatch.c
    ${CMAKE_SOURCE_DIR}/src/fsm/dispatch.c ${CMAKE_SOURCE_DIR}/src/fsm/plan.c)
  target_include_directories(fuzz_dispatch PRIVATE ${CMAKE_SOURCE_DIR}/src
                                                   ${CMAKE_SOURCE_DIR}/tests/fsm)
  target_link_libraries(fuzz_dispatch PRIVATE agentc_gen_fuzz)
  target_compile_options(fuzz_dispatch PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_dispatch PRIVATE -fsanitize=fuzzer,address,undefined)
  set(dispatch_seeds ${CMAKE_BINARY_DIR}/fuzz_dispatch_seeds)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz_dispatch_corpus)
  file(GLOB_RECURSE dispatch_seed_files ${CMAKE_SOURCE_DIR}/spec/*.fsm
       ${CMAKE_SOURCE_DIR}/tests/spec/valid/*.fsm ${CMAKE_SOURCE_DIR}/tests/gen/golden/*.fsm
       ${CMAKE_SOURCE_DIR}/examples/embed/*.fsm ${CMAKE_SOURCE_DIR}/examples/specs/*.fsm)
  agentc_fuzz_seeds(${dispatch_seeds} ${dispatch_seed_files})
  add_test(NAME fuzz_dispatch_30s
    COMMAND fuzz_dispatch -max_total_time=30 -timeout=10 -rss_limit_mb=2048
            -dict=${CMAKE_SOURCE_DIR}/tests/gen/fuzz_spec.dict
            ${CMAKE_BINARY_DIR}/fuzz_dispatch_corpus ${dispatch_seeds}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(fuzz_dispatch_30s PROPERTIES LABELS "fsm;fuzz" TIMEOUT 300)
endif()
