# The I/O substrate: event loop, libcurl multi integration, child processes.
find_package(Threads REQUIRED)
add_library(agentc_io STATIC
  ${CMAKE_SOURCE_DIR}/src/io/loop.c
  ${CMAKE_SOURCE_DIR}/src/io/idmap.c
  ${CMAKE_SOURCE_DIR}/src/io/http.c
  ${CMAKE_SOURCE_DIR}/src/io/proc.c
  ${CMAKE_SOURCE_DIR}/src/io/file.c)
target_include_directories(agentc_io PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(agentc_io PUBLIC agentc_util PkgConfig::CURL PkgConfig::JANSSON Threads::Threads)
