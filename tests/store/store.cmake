# The store: SQLite files, stored sessions, snapshots, leases, full and foreign files.
if(TARGET agentc_store)
  agentc_add_test(store_sqlite SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::SQLITE3 PkgConfig::JANSSON LABELS store)
endif()
