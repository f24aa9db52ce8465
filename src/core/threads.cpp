// set_num_threads / get_num_threads: one OpenMP pool shared by our loops and OpenBLAS.
#include <omp.h>

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

}  // namespace ignis
