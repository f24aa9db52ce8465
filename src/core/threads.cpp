// CPU execution settings: set_num_threads / get_num_threads (one OpenMP pool shared by our
// loops and OpenBLAS) and the Winograd switch of the CPU convolutions.
#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "ignis/ops.h"

extern "C" void openblas_set_num_threads(int);  // provided by OpenBLAS

namespace ignis {

void set_num_threads(int n) {
  IGNIS_CHECK(n >= 1, ValueError, "[set_num_threads] expected a positive thread count, got {}", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int get_num_threads() { return omp_get_max_threads(); }

namespace {
std::atomic<bool>& winograd_flag() {
  static std::atomic<bool> on{[] {
    const char* env = std::getenv("IGNIS_CPU_WINOGRAD");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }()};
  return on;
}
}  // namespace

void set_cpu_winograd(bool allow) { winograd_flag().store(allow); }
bool cpu_winograd() { return winograd_flag().load(); }

}  // namespace ignis
