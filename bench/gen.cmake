# bench_gen: the spec compiler on a synthetic 1,000-state, 10,000-transition
# spec, against `cc -fsyntax-only` on its output as a baseline.
# Run: build/bench_gen (from anywhere; prints figures, asserts nothing).
add_executable(bench_gen ${CMAKE_SOURCE_DIR}/bench/bench_gen.c)
target_link_libraries(bench_gen PRIVATE agentc_gen)
target_compile_definitions(bench_gen PRIVATE
  AGENTC_BENCH_CC="${CMAKE_C_COMPILER}"
  AGENTC_BENCH_INCLUDE="${CMAKE_SOURCE_DIR}/include")
