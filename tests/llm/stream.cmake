# Tests for the SSE scanner and streamed-response assembly (agentc_llm_stream).
agentc_add_test(test_llm_sse
  SOURCES ${CMAKE_SOURCE_DIR}/tests/llm/test_sse.c
  LIBS agentc_llm_stream
  LABELS llm)
agentc_add_test(test_llm_stream
  SOURCES ${CMAKE_SOURCE_DIR}/tests/llm/test_stream.c
  LIBS agentc_llm_stream
  LABELS llm)

if(AGENTC_FUZZ)
  # libFuzzer target: raw bytes into both wire formats, split into chunks derived
  # from the input. The ctest runs it for a bounded time.
  # The library sources are compiled into the target so libFuzzer sees their coverage.
  add_executable(fuzz_sse ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_sse.c ${AGENTC_SSE_C} ${AGENTC_DELTA_C}
    ${CMAKE_SOURCE_DIR}/src/llm/stream_fast.c
    ${CMAKE_SOURCE_DIR}/src/llm/stream.c
    ${CMAKE_SOURCE_DIR}/src/llm/stream_openai.c
    ${CMAKE_SOURCE_DIR}/src/llm/stream_anthropic.c
    ${CMAKE_SOURCE_DIR}/src/util/buf.c ${CMAKE_SOURCE_DIR}/src/util/grow.c)
  target_include_directories(fuzz_sse PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(fuzz_sse PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_sse PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_sse PRIVATE PkgConfig::JANSSON)
  # New inputs go to the build tree; the canned streams are read-only seeds.
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz_sse_corpus)
  add_test(NAME fuzz_llm_sse
    COMMAND fuzz_sse -max_total_time=30 -rss_limit_mb=1024 -timeout=10
            ${CMAKE_BINARY_DIR}/fuzz_sse_corpus ${CMAKE_SOURCE_DIR}/tests/llm/streams
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(fuzz_llm_sse PROPERTIES LABELS "llm;fuzz" TIMEOUT 120)
endif()
agentc_add_test(test_llm_delta
  SOURCES ${CMAKE_SOURCE_DIR}/tests/llm/test_delta.c
  LIBS agentc_llm_stream
  LABELS llm)

if(AGENTC_FUZZ)
  # libFuzzer target: the event scanners against jansson's reading of the
  # same bytes (every observable result byte-identical). Bounded time in ctest.
  add_executable(fuzz_delta ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_delta.c ${AGENTC_SSE_C}
    ${AGENTC_DELTA_C}
    ${CMAKE_SOURCE_DIR}/src/llm/stream_fast.c
    ${CMAKE_SOURCE_DIR}/src/llm/stream.c
    ${CMAKE_SOURCE_DIR}/src/llm/stream_openai.c
    ${CMAKE_SOURCE_DIR}/src/llm/stream_anthropic.c
    ${CMAKE_SOURCE_DIR}/src/util/buf.c ${CMAKE_SOURCE_DIR}/src/util/grow.c)
  target_include_directories(fuzz_delta PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src
    ${CMAKE_SOURCE_DIR}/tests/llm)
  target_compile_options(fuzz_delta PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_delta PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_delta PRIVATE PkgConfig::JANSSON)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz_delta_corpus)
  add_test(NAME fuzz_llm_delta
    COMMAND fuzz_delta -max_total_time=30 -rss_limit_mb=1024 -timeout=10
            ${CMAKE_BINARY_DIR}/fuzz_delta_corpus ${CMAKE_SOURCE_DIR}/tests/llm/streams
            ${CMAKE_SOURCE_DIR}/tests/fuzz/delta_seeds
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(fuzz_llm_delta PROPERTIES LABELS "llm;fuzz" TIMEOUT 120)
endif()
