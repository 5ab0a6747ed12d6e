# Tests of the I/O substrate: event loop, curl multi on the loop, child processes, and the
# loopback test server they use.
agentc_add_test(io_loop SOURCES ${CMAKE_SOURCE_DIR}/tests/io/test_loop.c LIBS agentc_io LABELS io)
agentc_add_test(io_http SOURCES ${CMAKE_SOURCE_DIR}/tests/io/test_http.c
  LIBS agentc_io agentc_test_httpd LABELS io)
agentc_add_test(io_httpd SOURCES ${CMAKE_SOURCE_DIR}/tests/io/test_httpd.c
  LIBS agentc_test_httpd LABELS io)
agentc_add_test(io_file SOURCES ${CMAKE_SOURCE_DIR}/tests/io/test_file.c LIBS agentc_io LABELS io)
agentc_add_test(io_proc SOURCES ${CMAKE_SOURCE_DIR}/tests/io/test_proc.c LIBS agentc_io LABELS io)
# The same process tests with exits noticed by polling waitid, as on systems without pidfd.
agentc_add_test(io_proc_poll SOURCES ${CMAKE_SOURCE_DIR}/tests/io/test_proc.c
  ${CMAKE_SOURCE_DIR}/src/io/loop.c ${CMAKE_SOURCE_DIR}/src/io/idmap.c ${CMAKE_SOURCE_DIR}/src/io/http.c
  ${CMAKE_SOURCE_DIR}/src/io/proc.c
  LIBS agentc_util PkgConfig::CURL Threads::Threads LABELS io)
target_include_directories(io_proc_poll PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_compile_definitions(io_proc_poll PRIVATE AC_PROC_NO_PIDFD)
set_tests_properties(io_loop io_http io_httpd io_file io_proc io_proc_poll PROPERTIES TIMEOUT 120)
