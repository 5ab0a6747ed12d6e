# Test support: the loopback HTTP server used by the io, llm and end-to-end tests.
find_package(Threads REQUIRED)
add_library(agentc_test_httpd STATIC ${CMAKE_SOURCE_DIR}/tests/support/test_httpd.c)
target_include_directories(agentc_test_httpd PUBLIC ${CMAKE_SOURCE_DIR}/tests/support)
target_link_libraries(agentc_test_httpd PUBLIC Threads::Threads)
# Rebuilding a session from its journal (session and provider tests).
add_library(agentc_test_replay STATIC ${CMAKE_SOURCE_DIR}/tests/support/journal_replay.c)
target_include_directories(agentc_test_replay PUBLIC ${CMAKE_SOURCE_DIR}/tests/support)
target_link_libraries(agentc_test_replay PUBLIC agentc_runtime)
