# Conversation data model, its JSON form, provider request bodies and token
# estimates; the compact JSON writer they and the runtime write with.
add_library(agentc_context STATIC
  ${CMAKE_SOURCE_DIR}/src/context/conversation.c
  ${CMAKE_SOURCE_DIR}/src/context/conv_json.c
  ${CMAKE_SOURCE_DIR}/src/context/request.c
  ${CMAKE_SOURCE_DIR}/src/context/request_cache.c
  ${CMAKE_SOURCE_DIR}/src/context/tokens.c
  ${CMAKE_SOURCE_DIR}/src/util/json_text.c)
target_include_directories(agentc_context PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(agentc_context PUBLIC agentc_util PkgConfig::JANSSON)
