# check_output.cmake - runs the approval example once and checks what it prints.
#   cmake -DPROG=path/to/embed_approval -DMODE=approve|deny -DSCRIPT=approval.jsonl
#         -P check_output.cmake
# Fails (FATAL_ERROR) on a non-zero exit, a missing line, a line out of order,
# or (deny) any sign that the calculator ran.
foreach(v PROG MODE SCRIPT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_output.cmake: -D${v}=... is required")
  endif()
endforeach()

execute_process(COMMAND ${PROG} --${MODE} --script ${SCRIPT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "embed_approval --${MODE} exited with '${rc}': ${err}")
endif()

# Each expected text must appear after the previous one.
set(pos 0)
function(expect_next text)
  string(SUBSTRING "${out}" ${pos} -1 rest)
  string(FIND "${rest}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "--${MODE}: expected, after offset ${pos}: '${text}'")
  endif()
  string(LENGTH "${text}" len)
  math(EXPR p "${pos} + ${at} + ${len}")
  set(pos ${p} PARENT_SCOPE)
endfunction()
function(expect_absent text)
  string(FIND "${out}" "${text}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "--${MODE}: unexpected '${text}' in the output")
  endif()
endfunction()

expect_next("approval: the model wants to run calculator {\"expression\": \"17 * 23\"} (call call_1)")
if(MODE STREQUAL "approve")
  expect_next("approval: approved")
  expect_next("tool call_1 running: calculator")
  expect_next("tool call_1 result: calculator ok: 391")
  expect_next("answer: Done.")
  expect_next("  [assistant] I will ask the calculator.")
  expect_next("  [tool] 391")
  expect_next("  [assistant] Done.")
  expect_absent("denied by the user")
elseif(MODE STREQUAL "deny")
  expect_next("approval: denied")
  expect_next("tool call_1 result: calculator failed: denied by the user")
  expect_next("answer: Done.")
  # the denial is in the conversation before the model's second turn, so it
  # was part of the second request
  expect_next("  [assistant] I will ask the calculator.")
  expect_next("  [tool] denied by the user")
  expect_next("  [assistant] Done.")
  expect_absent("running:")
  expect_absent("391")
else()
  message(FATAL_ERROR "MODE must be approve or deny, not '${MODE}'")
endif()
expect_next("approval requests: 1")
