// Device queries through the CUDA runtime. Any error from the runtime (no driver, "CUDA driver
// version is insufficient", no device) means "no GPU", never an exception or a crash.
#include <cuda_runtime_api.h>

#include "ignis/cuda.h"

namespace ignis::cuda {

bool is_built() { return true; }

int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error so later calls start clean
      return 0;
    }
    return n;
  }();
  return count;
}

bool is_available() { return device_count() > 0; }

}  // namespace ignis::cuda
