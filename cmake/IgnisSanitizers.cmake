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

# ThreadSanitizer cannot see the synchronisation inside the OpenMP runtime (libomp is not
# instrumented): a DataLoader worker's first OpenMP call reuses memory that libomp freed on
# another thread, which TSan reports as a race. Archer, LLVM's OpenMP tool shipped with libomp,
# tells TSan about libomp's synchronisation; the tests run with it (IGNIS_TEST_ENVIRONMENT).
# Even with it, libomp's internal locks inside a team of several threads still look racy, so
# the tsan test preset also keeps OpenMP to one thread (OMP_NUM_THREADS=1).
set(IGNIS_TEST_ENVIRONMENT "")
if("thread" IN_LIST IGNIS_SANITIZE)
  get_filename_component(_ignis_omp_dir "${OpenMP_omp_LIBRARY}" DIRECTORY)
  find_library(IGNIS_ARCHER_LIBRARY NAMES archer HINTS ${_ignis_omp_dir})
  if(IGNIS_ARCHER_LIBRARY)
    set(IGNIS_TEST_ENVIRONMENT "OMP_TOOL_LIBRARIES=${IGNIS_ARCHER_LIBRARY}")
  else()
    message(WARNING "libarcher not found beside libomp: TSan will report races inside libomp")
  endif()
endif()
