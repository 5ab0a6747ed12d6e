# Toolkits through the whole engine: a session talking to the loopback model server
# (tests/llm/provider_fixture.h), tools as child processes and C callbacks.
if(TARGET agentc_runtime AND TARGET agentc_llm_http)
  agentc_add_test(test_toolkits
    SOURCES ${CMAKE_SOURCE_DIR}/tests/session/test_toolkits.c
    LIBS agentc_runtime agentc_llm_http agentc_test_httpd agentc_test_replay PkgConfig::JANSSON
    LABELS session)
  target_include_directories(test_toolkits PRIVATE ${CMAKE_SOURCE_DIR}/tests/llm)
  set_tests_properties(test_toolkits PROPERTIES TIMEOUT 120)
endif()
