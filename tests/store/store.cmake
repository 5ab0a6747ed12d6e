# The store: SQLite files, stored sessions, snapshots, leases, full and foreign files.
if(TARGET agentc_store)
  agentc_add_test(store_sqlite SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::SQLITE3 PkgConfig::JANSSON Threads::Threads LABELS store)
endif()
if(TARGET agentc_store)
  agentc_add_test(store_json SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_json.c
    LIBS agentc_store PkgConfig::JANSSON LABELS store)
endif()
if(TARGET agentc_store)
  agentc_add_test(store_group SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_group.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::SQLITE3 PkgConfig::JANSSON LABELS store)
endif()
