# End-to-end tests of the HTTP LLM providers: a real engine and session talking to the
# loopback scripted server (tests/support/test_httpd).
if(TARGET agentc_runtime AND TARGET agentc_llm_http)
  agentc_add_test(test_llm_provider_http
    SOURCES ${CMAKE_SOURCE_DIR}/tests/llm/test_provider_http.c
    LIBS agentc_runtime agentc_llm_http agentc_test_httpd agentc_test_replay PkgConfig::JANSSON
    LABELS llm)
  set_tests_properties(test_llm_provider_http PROPERTIES TIMEOUT 300)
  # request settings and structured output, on the same fixture (provider_fixture.h)
  agentc_add_test(test_llm_provider_requests
    SOURCES ${CMAKE_SOURCE_DIR}/tests/llm/test_provider_requests.c
    LIBS agentc_runtime agentc_llm_http agentc_test_httpd agentc_test_replay PkgConfig::JANSSON
    LABELS llm)
  set_tests_properties(test_llm_provider_requests PROPERTIES TIMEOUT 300)
endif()
