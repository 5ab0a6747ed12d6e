# Compaction through a real engine (needs the runtime): every strategy keeps
# the request valid and makes it smaller.
agentc_add_test(context_compaction
  SOURCES ${CMAKE_SOURCE_DIR}/tests/context/test_compaction.c
  LIBS agentc_runtime agentc_io LABELS context)
