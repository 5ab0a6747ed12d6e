# The store: SQLite files, stored sessions, snapshots, leases, full and foreign files.
if(TARGET agentc_store)
  agentc_add_test(store_sqlite SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::SQLITE3 PkgConfig::JANSSON Threads::Threads LABELS store)
endif()
if(TARGET agentc_store)
  agentc_add_test(store_json SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_json.c
    LIBS agentc_store agentc_runtime PkgConfig::JANSSON LABELS store)
endif()
if(TARGET agentc_store)
  agentc_add_test(store_group SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_group.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::SQLITE3 PkgConfig::JANSSON LABELS store)
endif()
# The store interface's promises: a group commit's failure scoped to one session, leases by
# the database's clock, holders' names, a gone holder (a zombie) freeing its sessions at once.
if(TARGET agentc_store)
  agentc_add_test(store_lease SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_lease.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::SQLITE3 PkgConfig::JANSSON LABELS store)
endif()
# The spec's facts as a snapshot part: snapshot + tail equals a full replay on fact guards.
if(TARGET agentc_store)
  agentc_add_test(store_facts SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_facts.c
    LIBS agentc_store agentc_runtime agentc_io agentc_gen PkgConfig::JANSSON LABELS store)
endif()
# A session's options: NULL ones, a system prompt of odd bytes and 300 KB (kept exactly, back
# from the store), one that is not UTF-8 refused with an error (the engine's and a session's).
if(TARGET agentc_store)
  agentc_add_test(store_session_opts SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_session_opts.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::JANSSON LABELS store session)
endif()
# A stored session's client tools come back from its snapshot: still offered, still handed to
# its caller and answered.
if(TARGET agentc_store)
  agentc_add_test(store_client_tools SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_client.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::JANSSON LABELS store session)
endif()
# A session's agent: recorded at creation, changed at rest by one journal record with a kept
# snapshot, the past never judged again under the new one (the gallery's tool budget lowered
# after a turn of 3 calls); the agent at an event; a fork at the end of a turn.
if(TARGET agentc_store)
  agentc_add_test(store_agent SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_agent.c
    LIBS agentc_store agentc_runtime agentc_io agentc_gen PkgConfig::SQLITE3 PkgConfig::JANSSON
    LABELS store session)
endif()
# A store this user may not write: sessions list, show and export read it; what writes says
# it is read-only.
add_test(NAME store_readonly
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/store/readonly.sh $<TARGET_FILE:agentc>
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(store_readonly PROPERTIES LABELS "store;cli" SKIP_RETURN_CODE 77 TIMEOUT 60)
# The store interface's conformance suite, one file for both backends: SQLite here, and
# PostgreSQL (store_ops_pg) on a throwaway cluster the pg_cluster fixture starts for the run
# (127.0.0.1 and a unix socket in a temporary folder, stopped at the end).
if(TARGET agentc_store)
  agentc_add_test(store_ops SOURCES ${CMAKE_SOURCE_DIR}/tests/store/test_store_ops.c
    LIBS agentc_store agentc_runtime agentc_io PkgConfig::JANSSON LABELS store)
  string(MD5 _pg_h "${CMAKE_BINARY_DIR}")
  string(SUBSTRING "${_pg_h}" 0 4 _pg_h4)
  math(EXPR AGENTC_PG_TEST_PORT "0x${_pg_h4} % 20000 + 30000")
  set(AGENTC_PG_TEST_DIR /tmp/agentc-pg-${AGENTC_PG_TEST_PORT})
  set(AGENTC_PG_TEST_URI
    "postgresql://agentc:agentc-test-pw@127.0.0.1:${AGENTC_PG_TEST_PORT}/agentc")
  add_test(NAME pg_cluster_start COMMAND bash ${CMAKE_SOURCE_DIR}/tests/store/pg_cluster.sh
    start ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT})
  add_test(NAME pg_cluster_stop COMMAND bash ${CMAKE_SOURCE_DIR}/tests/store/pg_cluster.sh
    stop ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT})
  set_tests_properties(pg_cluster_start PROPERTIES FIXTURES_SETUP pg_cluster LABELS "store;pg"
    TIMEOUT 90)
  set_tests_properties(pg_cluster_stop PROPERTIES FIXTURES_CLEANUP pg_cluster LABELS "store;pg"
    TIMEOUT 60)
  add_test(NAME store_ops_pg COMMAND store_ops WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(store_ops_pg PROPERTIES FIXTURES_REQUIRED pg_cluster LABELS "store;pg"
    ENVIRONMENT "AGENTC_TEST_PG=${AGENTC_PG_TEST_URI};AGENTC_TEST_PG_DIR=${AGENTC_PG_TEST_DIR};AGENTC_TEST_PG_PORT=${AGENTC_PG_TEST_PORT}"
    TIMEOUT 120 RESOURCE_LOCK pg_cluster)
endif()
# agentc's commands on a PostgreSQL store end to end: run --session, sessions list, serve --db;
# the URI's password in no output or error; a newer schema refused.
if(TARGET agentc_store)
  add_test(NAME store_pg_cli COMMAND bash ${CMAKE_SOURCE_DIR}/tests/store/pg_cli.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # it restarts the cluster: no other test of the cluster runs meanwhile (RESOURCE_LOCK)
  set_tests_properties(store_pg_cli PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "store;pg;cli" TIMEOUT 120 RESOURCE_LOCK pg_cluster)
endif()
# The store tests of any backend run again against PostgreSQL (the same files; AGENTC_TEST_PG
# names the database, each run in schemas of its own).
if(TARGET agentc_store)
  foreach(t store_sqlite store_facts store_agent)
    string(REPLACE "store_sqlite" "store" _pg_name "${t}")
    add_test(NAME ${_pg_name}_pg COMMAND ${t} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(${_pg_name}_pg PROPERTIES FIXTURES_REQUIRED pg_cluster
      LABELS "store;pg" ENVIRONMENT "AGENTC_TEST_PG=${AGENTC_PG_TEST_URI}" TIMEOUT 120
      RESOURCE_LOCK pg_cluster)
  endforeach()
endif()
# agentc store copy both ways between SQLite and PostgreSQL (journals byte-identical, replay
# --check on the copies), on sessions with tool calls, State, toolkits, compaction and a fork.
if(TARGET agentc_store)
  add_test(NAME store_pg_copy COMMAND bash ${CMAKE_SOURCE_DIR}/tests/store/pg_copy.sh
    $<TARGET_FILE:agentc> ${AGENTC_PG_TEST_URI} ${AGENTC_PG_TEST_DIR} ${AGENTC_PG_TEST_PORT}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(store_pg_copy PROPERTIES FIXTURES_REQUIRED pg_cluster
    LABELS "store;pg;cli" TIMEOUT 120 RESOURCE_LOCK pg_cluster SKIP_RETURN_CODE 77)
endif()
# The wake-up connections (LISTEN/NOTIFY, coalesced) and the inbox, on PostgreSQL only.
if(TARGET agentc_store)
  add_executable(store_notify ${CMAKE_SOURCE_DIR}/tests/store/test_store_notify.c)
  target_link_libraries(store_notify PRIVATE agentc_store agentc_runtime PkgConfig::CMOCKA)
  target_include_directories(store_notify PRIVATE ${CMAKE_SOURCE_DIR}/tests/support)
  add_test(NAME store_notify_pg COMMAND store_notify WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(store_notify_pg PROPERTIES FIXTURES_REQUIRED pg_cluster LABELS "store;pg"
    ENVIRONMENT "AGENTC_TEST_PG=${AGENTC_PG_TEST_URI}" TIMEOUT 120 RESOURCE_LOCK pg_cluster)
endif()
