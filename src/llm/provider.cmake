# agentc_llm_http: the HTTP LLM providers (OpenAI-compatible Chat Completions and
# Anthropic Messages) streaming over the event loop's shared libcurl multi.
add_library(agentc_llm_http STATIC ${CMAKE_SOURCE_DIR}/src/llm/http_provider.c)
target_include_directories(agentc_llm_http PUBLIC
  ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src ${CMAKE_BINARY_DIR}/generated)
target_link_libraries(agentc_llm_http PUBLIC
  agentc_llm_stream agentc_io agentc_context agentc_util PkgConfig::CURL PkgConfig::JANSSON)
