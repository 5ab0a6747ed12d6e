# agentc serve: the HTTP server (libmicrohttpd) and the audit page built into it.
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
set(AGENTC_PAGE_C ${CMAKE_BINARY_DIR}/gen_server/page.c)
add_custom_command(OUTPUT ${AGENTC_PAGE_C}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/gen_server
  COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/src/server/audit.html -DOUT=${AGENTC_PAGE_C}
          -DNAME=ac_srv_page -DNAME_SRC=src/server/audit.html
          -P ${CMAKE_SOURCE_DIR}/cmake/agentc_embed.cmake
  DEPENDS ${CMAKE_SOURCE_DIR}/src/server/audit.html ${CMAKE_SOURCE_DIR}/cmake/agentc_embed.cmake
  COMMENT "Embedding the audit page")
add_library(agentc_server STATIC
  ${CMAKE_SOURCE_DIR}/src/server/server.c
  ${CMAKE_SOURCE_DIR}/src/server/load.c
  ${CMAKE_SOURCE_DIR}/src/server/fork.c
  ${CMAKE_SOURCE_DIR}/src/server/delete.c
  ${CMAKE_SOURCE_DIR}/src/server/admit.c
  ${CMAKE_SOURCE_DIR}/src/server/sessions.c
  ${CMAKE_SOURCE_DIR}/src/server/catchup.c
  ${CMAKE_SOURCE_DIR}/src/server/children.c
  ${CMAKE_SOURCE_DIR}/src/server/streams.c
  ${CMAKE_SOURCE_DIR}/src/server/compat.c
  ${CMAKE_SOURCE_DIR}/src/server/compat_tools.c
  ${CMAKE_SOURCE_DIR}/src/server/frames.c
  ${CMAKE_SOURCE_DIR}/src/server/agents.c
  ${CMAKE_SOURCE_DIR}/src/server/remote.c
  ${CMAKE_SOURCE_DIR}/src/server/workers.c
  ${AGENTC_PAGE_C})
target_include_directories(agentc_server PUBLIC ${CMAKE_SOURCE_DIR}/src/server PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(agentc_server PUBLIC agentc_runtime agentc_store PkgConfig::MHD PkgConfig::JANSSON PkgConfig::SQLITE3)
