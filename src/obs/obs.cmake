# Traces (src/obs): the span model, the OTLP/HTTP JSON exporter on the loop's curl multi, the
# OTEL_* configuration and the GenAI mapping of a session's events; part of the runtime.
target_sources(agentc_runtime PRIVATE
  ${CMAKE_SOURCE_DIR}/src/obs/span.c
  ${CMAKE_SOURCE_DIR}/src/obs/otlp.c
  ${CMAKE_SOURCE_DIR}/src/obs/otel_env.c
  ${CMAKE_SOURCE_DIR}/src/obs/genai.c
  ${CMAKE_SOURCE_DIR}/src/obs/metrics.c
  ${CMAKE_SOURCE_DIR}/src/obs/cost.c
  ${CMAKE_SOURCE_DIR}/src/obs/obs_engine.c)
