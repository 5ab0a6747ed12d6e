# Tests of the table-driven dispatcher, driven with small specs compiled in-process.
agentc_add_test(fsm_dispatch SOURCES ${CMAKE_SOURCE_DIR}/tests/fsm/test_dispatch.c
  LIBS agentc_runtime agentc_gen LABELS fsm)
