# State reference benchmark (not a test): make bench_state && ./bench_state [runs]
add_executable(bench_state ${CMAKE_SOURCE_DIR}/bench/bench_state.c)
target_include_directories(bench_state PRIVATE ${CMAKE_SOURCE_DIR}/bench)
target_link_libraries(bench_state PRIVATE agentc_tools_base)
