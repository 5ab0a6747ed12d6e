# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P agentc_embed.cmake
# Writes OUT defining `const char NAME[]` (the bytes of IN, NUL-terminated) and
# `const size_t NAME_len`, so an asset is built into the binary.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* Generated from ${NAME_SRC} by cmake/agentc_embed.cmake. DO NOT EDIT. */\n"
  "#include <stddef.h>\nconst char ${NAME}[] = {\n${body}0};\nconst size_t ${NAME}_len = ${bytes};\n")
