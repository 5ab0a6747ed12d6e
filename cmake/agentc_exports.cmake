# The public API of libagentc: every ac_* function the public headers
# (include/agentc/*.h) declare or name. agentc_public_symbols(OUT) sets OUT to
# that list; the shared library exports exactly these (a linker version
# script), and the check script (cmake -P cmake/agentc_exports.cmake with
# -DLIB=... -DNM=... -DHEADERS=...) verifies a built library against it.
function(agentc_public_symbols out headers_dir)
  file(GLOB headers ${headers_dir}/*.h)
  set(syms "")
  foreach(h ${headers})
    file(READ ${h} text)
    # a name directly followed by "(": a prototype (function pointer types
    # are written "(*name)(" and do not match)
    string(REGEX MATCHALL "ac_[a-z0-9_]+[ \t]*\\(" found "${text}")
    foreach(f ${found})
      string(REGEX REPLACE "[ \t]*\\($" "" f "${f}")
      list(APPEND syms ${f})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES syms)
  list(SORT syms)
  set(${out} ${syms} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  # check mode: what the library exports must be public, and the entry
  # points an embedder needs first must be there
  agentc_public_symbols(public ${HEADERS})
  execute_process(COMMAND ${NM} -D --defined-only ${LIB} OUTPUT_VARIABLE out
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${LIB}")
  endif()
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  set(exported "")
  set(extra "")
  foreach(l ${lines})
    string(REGEX REPLACE "^.* ([^ ]+)$" "\\1" sym "${l}")
    string(REGEX MATCH " [TDRB] " kind "${l}")
    if(kind STREQUAL "")
      continue() # versions, weak and absolute symbols of the toolchain
    endif()
    list(APPEND exported ${sym})
    list(FIND public ${sym} at)
    if(at EQUAL -1)
      list(APPEND extra ${sym})
    endif()
  endforeach()
  if(extra)
    message(FATAL_ERROR "exported but not in the public headers: ${extra}")
  endif()
  foreach(need ac_engine_new ac_engine_free ac_session_new ac_session_send ac_session_free
               ac_loop_new ac_loop_run ac_registry_new ac_fsm_dispatch ac_fsm_plan_new)
    list(FIND exported ${need} at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${need} is not exported")
    endif()
  endforeach()
  list(LENGTH exported n)
  message(STATUS "libagentc exports ${n} symbols, all of them public")
endif()
