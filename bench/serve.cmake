# agentc serve benchmark (not a test): cmake --build BUILD --target bench_serve
# 1,000 concurrent SSE clients, CPU per event against agentc batch, 10,000 stored sessions.
if(TARGET agentc)
  add_custom_target(bench_serve
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_serve.sh $<TARGET_FILE:agentc> 1000 5
            $<TARGET_FILE:bench_mhd_sse>
    DEPENDS agentc bench_mhd_sse
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
# agentc serve as workers of one PostgreSQL database (not a test): cmake --build BUILD --target
# bench_failover. CPU per turn with 1, 2, 3 workers vs SQLite; failover time over 10 kill -9 trials.
if(TARGET agentc)
  add_custom_target(bench_failover
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_failover.sh $<TARGET_FILE:agentc> 200 3
    DEPENDS agentc
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
# Several serve workers on one PostgreSQL store (not a test): cmake --build BUILD --target
# bench_workers. SSE delivery delay on the holder and on another worker, notifying commits/s.
if(TARGET agentc)
  add_custom_target(bench_workers
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_workers.sh $<TARGET_FILE:agentc> 50 4 3
    DEPENDS agentc
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
# The bare libmicrohttpd SSE sender bench_serve measures serve's delivery delay against.
add_executable(bench_mhd_sse ${CMAKE_SOURCE_DIR}/bench/bench_mhd_sse.c)
target_link_libraries(bench_mhd_sse PRIVATE PkgConfig::MHD Threads::Threads)
# A worker's loop while its PostgreSQL database answers slowly (not a test): cmake --build BUILD
# --target bench_loop_stall. /healthz's longest answer (the loop's longest stall) on a worker
# that streams a session another runs and forwards messages to it, every packet to the
# database held 50 ms by a proxy.
if(TARGET agentc)
  add_custom_target(bench_loop_stall
    COMMAND bash ${CMAKE_SOURCE_DIR}/bench/bench_loop_stall.sh $<TARGET_FILE:agentc> 50 6 3
    DEPENDS agentc
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    USES_TERMINAL)
endif()
