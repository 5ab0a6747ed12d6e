# Tests of the table-driven dispatcher, driven with small specs compiled in-process.
agentc_add_test(fsm_dispatch SOURCES ${CMAKE_SOURCE_DIR}/tests/fsm/test_dispatch.c
  LIBS agentc_runtime agentc_gen LABELS fsm)
# Allocation counting by link-time wrapping of malloc/calloc/realloc.
agentc_add_test(fsm_dispatch_noalloc SOURCES ${CMAKE_SOURCE_DIR}/tests/fsm/test_dispatch_noalloc.c
  LIBS agentc_runtime LABELS fsm)
target_link_options(fsm_dispatch_noalloc PRIVATE -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc)
# The index, the row scan, the one-call and the straight paths agree call for call.
agentc_add_test(fsm_dispatch_diff SOURCES ${CMAKE_SOURCE_DIR}/tests/fsm/test_dispatch_diff.c
  LIBS agentc_runtime LABELS fsm)
