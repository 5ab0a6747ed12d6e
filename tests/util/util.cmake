# Tests of src/util.
agentc_add_test(util_utf8 SOURCES ${CMAKE_SOURCE_DIR}/tests/util/test_utf8.c LIBS agentc_util
  LABELS util)
agentc_add_test(util_units SOURCES ${CMAKE_SOURCE_DIR}/tests/util/test_units.c LIBS agentc_util
  LABELS util)
agentc_add_test(util_toolname SOURCES ${CMAKE_SOURCE_DIR}/tests/util/test_toolname.c
  LIBS agentc_util LABELS util)
agentc_add_test(util_buf SOURCES ${CMAKE_SOURCE_DIR}/tests/util/test_buf.c LIBS agentc_util
  LABELS util)
agentc_add_test(util_grow SOURCES ${CMAKE_SOURCE_DIR}/tests/util/test_grow.c LIBS agentc_util
  LABELS util)
