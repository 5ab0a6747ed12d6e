# Several serve workers on one PostgreSQL store (not a test): cmake --build BUILD --target
# bench_workers. SSE delivery delay on the holder and on another worker, notifying commits/s.
if(TARGET agentc)
  add_custom_target(bench_workers
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_workers.sh $<TARGET_FILE:agentc> 50 4 3
    DEPENDS agentc
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
