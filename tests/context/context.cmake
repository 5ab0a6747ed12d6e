# Tests of src/context.
agentc_add_test(context_conversation
  SOURCES ${CMAKE_SOURCE_DIR}/tests/context/test_conversation.c
  LIBS agentc_context LABELS context)
agentc_add_test(context_json
  SOURCES ${CMAKE_SOURCE_DIR}/tests/context/test_conv_json.c
  LIBS agentc_context LABELS context)
agentc_add_test(context_request
  SOURCES ${CMAKE_SOURCE_DIR}/tests/context/test_request.c
  LIBS agentc_context LABELS context)
agentc_add_test(context_tokens
  SOURCES ${CMAKE_SOURCE_DIR}/tests/context/test_tokens.c
  LIBS agentc_context LABELS context)
agentc_add_test(context_request_cache
  SOURCES ${CMAKE_SOURCE_DIR}/tests/context/test_request_cache.c
  LIBS agentc_context LABELS context)
