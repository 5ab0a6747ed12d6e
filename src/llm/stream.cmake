# agentc_llm_stream: SSE scanner (Ragel), the hot-delta scanners (Ragel) and
# streamed-response assembly for the OpenAI-compatible and Anthropic wire formats.
agentc_ragel(AGENTC_SSE_C src/llm/sse.rl FLAGS -G2)
agentc_ragel(AGENTC_DELTA_C src/llm/delta.rl FLAGS -G2)
# Ragel's goto code falls from state to state on purpose.
set_source_files_properties(${AGENTC_SSE_C} ${AGENTC_DELTA_C} PROPERTIES
  COMPILE_OPTIONS "-Wno-implicit-fallthrough;-Wno-unused-label")
add_library(agentc_llm_stream STATIC
  ${AGENTC_SSE_C}
  ${AGENTC_DELTA_C}
  ${CMAKE_SOURCE_DIR}/src/llm/stream.c
  ${CMAKE_SOURCE_DIR}/src/llm/stream_fast.c
  ${CMAKE_SOURCE_DIR}/src/llm/stream_openai.c
  ${CMAKE_SOURCE_DIR}/src/llm/stream_anthropic.c)
target_include_directories(agentc_llm_stream PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(agentc_llm_stream PUBLIC agentc_util PkgConfig::JANSSON)
