# libFuzzer target for the conversation JSON and request builders (clang,
# -DAGENTC_FUZZ=ON). The sources are compiled in so coverage reaches them.
if(AGENTC_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  file(GLOB _context_srcs ${CMAKE_SOURCE_DIR}/src/context/*.c)
  add_executable(fuzz_conv ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_conv.c ${_context_srcs}
                           ${CMAKE_SOURCE_DIR}/src/util/buf.c
                           ${CMAKE_SOURCE_DIR}/src/util/grow.c
                           ${CMAKE_SOURCE_DIR}/src/util/utf8.c
                           ${CMAKE_SOURCE_DIR}/src/util/toolname.c
                           ${CMAKE_SOURCE_DIR}/src/util/json_text.c)
  target_include_directories(fuzz_conv PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  target_compile_options(fuzz_conv PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_conv PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_conv PRIVATE PkgConfig::JANSSON)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz_conv_corpus)
  add_test(NAME fuzz_conv_30s
    COMMAND fuzz_conv -max_total_time=30 -rss_limit_mb=1024 -timeout=10
            ${CMAKE_BINARY_DIR}/fuzz_conv_corpus ${CMAKE_SOURCE_DIR}/tests/fuzz/conv_seeds
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(fuzz_conv_30s PROPERTIES LABELS "context;fuzz" TIMEOUT 120)
endif()
