// How long the CPU kernels' OpenMP threads spin before they sleep, set once by `ignis` before
// any of its work (Note [OpenMP waiting on a shared machine], openmp_wait.cpp).
#pragma once

#include <string>

namespace ignis_cli {

/// GOMP_SPINCOUNT that `ignis` runs with unless the user sets GOMP_SPINCOUNT or OMP_WAIT_POLICY.
inline constexpr const char* kSpinCount = "3000";

/// With GNU's OpenMP runtime loaded and neither variable set: sets GOMP_SPINCOUNT=kSpinCount
/// and executes this program again with the same arguments (the runtime reads it only when it
/// is loaded). Returns when nothing was to be done, or when the re-execution failed (then the
/// runtime's own setting stays, with the environment as it was).
void limit_openmp_spinning(char** argv);

/// One line for `ignis devices`: what the OpenMP threads do while they wait, and who set it.
std::string openmp_wait_text();

}  // namespace ignis_cli
