# Dispatcher benchmark (not a test): make bench_dispatch && ./bench_dispatch
add_executable(bench_dispatch ${CMAKE_SOURCE_DIR}/bench/bench_dispatch.c
  ${CMAKE_SOURCE_DIR}/bench/bench_dispatch_guard.c)
target_link_libraries(bench_dispatch PRIVATE agentc_runtime)
