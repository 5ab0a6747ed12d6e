# agentc_util: small helpers without dependencies, shared by every area
# (the spec compiler included): a capped string buffer; growable arrays;
# UTF-8 validation and repair; durations, sizes and times; SHA-256; random bytes for ids.
add_library(agentc_util STATIC
  ${CMAKE_SOURCE_DIR}/src/util/buf.c
  ${CMAKE_SOURCE_DIR}/src/util/grow.c
  ${CMAKE_SOURCE_DIR}/src/util/utf8.c
  ${CMAKE_SOURCE_DIR}/src/util/units.c
  ${CMAKE_SOURCE_DIR}/src/util/secrets.c
  ${CMAKE_SOURCE_DIR}/src/util/toolname.c
  ${CMAKE_SOURCE_DIR}/src/util/sha256.c
  ${CMAKE_SOURCE_DIR}/src/util/random.c)
target_include_directories(agentc_util PUBLIC ${CMAKE_SOURCE_DIR}/src)
