# Toolkit benchmark (not a test): make bench_toolkits && ./bench_toolkits [runs] [requests]
# The request body with a 100-tool toolkit whose enums come from a 1,000-value context,
# against the same tools without toolkits, in the same run.
add_executable(bench_toolkits ${CMAKE_SOURCE_DIR}/bench/bench_toolkits.c)
target_link_libraries(bench_toolkits PRIVATE agentc_runtime)
