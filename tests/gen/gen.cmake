# Tests of the spec compiler's output: golden files, generated C that
# compiles, DOT that renders, reproducibility, robustness on broken input,
# the agentc_generate() CMake function, and (AGENTC_FUZZ=ON) a libFuzzer
# target. Scripts run from the repository root with the built agentc-gen.
find_program(AGENTC_BASH bash)

agentc_add_test(gen_spec_robust SOURCES ${CMAKE_SOURCE_DIR}/tests/gen/test_spec_robust.c
  LIBS agentc_gen LABELS gen)
set_tests_properties(gen_spec_robust PROPERTIES TIMEOUT 600)

if(AGENTC_BASH)
  # golden name -> spec
  set(gen_golden_specs agent spec/agent.fsm)
  file(GLOB gen_golden_files ${CMAKE_SOURCE_DIR}/tests/gen/golden/*.fsm)
  list(SORT gen_golden_files)
  foreach(f ${gen_golden_files})
    get_filename_component(n ${f} NAME_WE)
    list(APPEND gen_golden_specs ${n} tests/gen/golden/${n}.fsm)
  endforeach()
  # specs whose generated C must compile and whose DOT must render
  set(gen_output_specs ${gen_golden_specs})
  file(GLOB gen_valid_files ${CMAKE_SOURCE_DIR}/tests/spec/valid/*.fsm)
  list(SORT gen_valid_files)
  foreach(f ${gen_valid_files})
    get_filename_component(n ${f} NAME_WE)
    list(APPEND gen_output_specs valid_${n} tests/spec/valid/${n}.fsm)
  endforeach()

  list(LENGTH gen_golden_specs n_items)
  math(EXPR last "${n_items} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET gen_golden_specs ${i} name)
    list(GET gen_golden_specs ${j} spec)
    add_test(NAME gen_golden_${name}
      COMMAND ${AGENTC_BASH} tests/gen/golden.sh $<TARGET_FILE:agentc-gen> ${spec} ${name}
              tests/gen/golden
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(gen_golden_${name} PROPERTIES LABELS gen)
  endforeach()

  list(LENGTH gen_output_specs n_items)
  math(EXPR last "${n_items} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET gen_output_specs ${i} name)
    list(GET gen_output_specs ${j} spec)
    add_test(NAME gen_compile_${name}
      COMMAND ${AGENTC_BASH} tests/gen/compile.sh $<TARGET_FILE:agentc-gen> ${CMAKE_C_COMPILER}
              ${spec}
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    add_test(NAME gen_dot_${name}
      COMMAND ${AGENTC_BASH} tests/gen/dot.sh $<TARGET_FILE:agentc-gen> ${spec}
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(gen_compile_${name} gen_dot_${name} PROPERTIES LABELS gen)
    set_tests_properties(gen_dot_${name} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()

  # a failed run leaves the old .h/.c pair as it was (F13)
  add_test(NAME gen_atomic
    COMMAND ${AGENTC_BASH} tests/gen/atomic.sh $<TARGET_FILE:agentc-gen>
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(gen_atomic PROPERTIES LABELS gen)

  add_test(NAME gen_repro
    COMMAND ${AGENTC_BASH} tests/gen/repro.sh $<TARGET_FILE:agentc-gen>
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(gen_repro PROPERTIES LABELS gen)
endif()

# agentc_generate(): tables built by the CMake function, linked into a
# program, and byte-identical to the golden files.
agentc_generate(TARGET gen_tiny_tables SPEC tests/gen/golden/tiny.fsm)
agentc_add_test(gen_cmake_generate SOURCES ${CMAKE_SOURCE_DIR}/tests/gen/test_generate.c
  LIBS gen_tiny_tables LABELS gen)
foreach(f tiny_fsm.h tiny_fsm.c)
  add_test(NAME gen_cmake_generate_${f}
    COMMAND ${CMAKE_COMMAND} -E compare_files
            ${CMAKE_CURRENT_BINARY_DIR}/gen_tiny_tables_generated/${f}
            ${CMAKE_SOURCE_DIR}/tests/gen/golden/${f})
  set_tests_properties(gen_cmake_generate_${f} PROPERTIES LABELS gen)
endforeach()

# libFuzzer target (clang only): the gen sources again, instrumented.
if(AGENTC_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "AGENTC_FUZZ needs clang (CC=clang); fuzz_spec is not built")
  else()
    get_target_property(gen_fuzz_sources agentc_gen SOURCES)
    add_library(agentc_gen_fuzz STATIC ${gen_fuzz_sources})
    target_include_directories(agentc_gen_fuzz PUBLIC ${CMAKE_SOURCE_DIR}/gen
                                                      ${CMAKE_SOURCE_DIR}/include)
    target_link_libraries(agentc_gen_fuzz PUBLIC agentc_util)
    target_compile_options(agentc_gen_fuzz PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                                                   -fno-omit-frame-pointer)
    add_executable(fuzz_spec ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_spec.c)
    target_link_libraries(fuzz_spec PRIVATE agentc_gen_fuzz)
    target_compile_options(fuzz_spec PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_spec PRIVATE -fsanitize=fuzzer,address,undefined)

    # seed corpus: every spec of the tree, copied at configure time
    set(fuzz_seeds ${CMAKE_BINARY_DIR}/fuzz_spec_seeds)
    file(MAKE_DIRECTORY ${fuzz_seeds} ${CMAKE_BINARY_DIR}/fuzz_spec_corpus)
    file(GLOB_RECURSE fuzz_seed_files ${CMAKE_SOURCE_DIR}/spec/*.fsm
         ${CMAKE_SOURCE_DIR}/tests/spec/*.fsm ${CMAKE_SOURCE_DIR}/tests/gen/golden/*.fsm)
    agentc_fuzz_seeds(${fuzz_seeds} ${fuzz_seed_files})
    add_test(NAME fuzz_spec_60s
      COMMAND fuzz_spec -max_total_time=60 -timeout=10 -rss_limit_mb=2048
              -dict=${CMAKE_SOURCE_DIR}/tests/gen/fuzz_spec.dict
              ${CMAKE_BINARY_DIR}/fuzz_spec_corpus ${fuzz_seeds}
      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(fuzz_spec_60s PROPERTIES LABELS "gen;fuzz" TIMEOUT 300)
  endif()
endif()
