# Sanitizer and fuzzing builds (presets asan, tsan and fuzz; see docs/reliability.md).
#   IGNIS_SANITIZE  sanitizers applied to every target, e.g. "address;undefined" or "thread".
#                   Nothing recovers: the first report aborts the process, so a test with
#                   undefined behaviour fails instead of printing a warning nobody reads.
#   IGNIS_FUZZ      builds the libFuzzer targets in fuzz/ (clang only). Every target then
#                   gets libFuzzer's coverage instrumentation (fuzzer-no-link), so one build
#                   serves both the sanitized unit tests and the fuzzers.
set(IGNIS_SANITIZE "" CACHE STRING "Sanitizers for every target (address;undefined, thread, or empty)")
option(IGNIS_FUZZ "Build the libFuzzer targets in fuzz/ (needs clang)" OFF)

if(IGNIS_SANITIZE)
  string(REPLACE ";" "," _ignis_san "${IGNIS_SANITIZE}")
  add_compile_options(-fsanitize=${_ignis_san} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_ignis_san})
  set(IGNIS_SANITIZE_STATUS "${_ignis_san}")
else()
  set(IGNIS_SANITIZE_STATUS "none")
endif()

if(IGNIS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "IGNIS_FUZZ needs clang (libFuzzer); use the fuzz preset")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
