# Durable sessions: the store (agentc/store.h), its SQLite and PostgreSQL backends, the writer
# that follows stored sessions and their snapshots.
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
add_library(agentc_store STATIC
  ${CMAKE_SOURCE_DIR}/src/store/store.c
  ${CMAKE_SOURCE_DIR}/src/store/store_sqlite.c
  ${CMAKE_SOURCE_DIR}/src/store/store_pg.c
  ${CMAKE_SOURCE_DIR}/src/store/store_pg_commit.c
  ${CMAKE_SOURCE_DIR}/src/store/store_pg_schema.c
  ${CMAKE_SOURCE_DIR}/src/store/store_writer.c
  ${CMAKE_SOURCE_DIR}/src/store/store_group.c
  ${CMAKE_SOURCE_DIR}/src/store/store_load.c
  ${CMAKE_SOURCE_DIR}/src/store/store_ahead.c
  ${CMAKE_SOURCE_DIR}/src/store/store_fork.c
  ${CMAKE_SOURCE_DIR}/src/store/store_copy.c
  ${CMAKE_SOURCE_DIR}/src/store/store_recover.c
  ${CMAKE_SOURCE_DIR}/src/store/store_json.c
  ${CMAKE_SOURCE_DIR}/src/store/store_workers.c
  ${CMAKE_SOURCE_DIR}/src/store/store_notify.c
  ${CMAKE_SOURCE_DIR}/src/store/store_inbox.c
  ${CMAKE_SOURCE_DIR}/src/store/store_pg_loop.c
  ${CMAKE_SOURCE_DIR}/src/store/store_pg_tend.c)
target_include_directories(agentc_store PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(agentc_store PUBLIC agentc_runtime PkgConfig::SQLITE3 PkgConfig::LIBPQ PkgConfig::JANSSON)
