// Device queries through the CUDA runtime. Any error from the runtime (no driver, "CUDA driver
// version is insufficient", no device) means "no GPU", never an exception or a crash.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

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

DeviceProperties device_properties(int index) {
  DeviceProperties p;
  cudaDeviceProp prop{};
  if (index < 0 || index >= device_count() ||
      cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    cudaGetLastError();
    return p;
  }
  p.name = prop.name;
  p.total_memory = prop.totalGlobalMem;
  p.major = prop.major;
  p.minor = prop.minor;
  p.multiprocessors = prop.multiProcessorCount;
  return p;
}

int driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) cudaGetLastError(), v = 0;
  return v;
}

int runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) cudaGetLastError(), v = 0;
  return v;
}

// The versions of the libraries loaded at run time (not the headers compiled against).
int cublas_version() { return static_cast<int>(cublasLtGetVersion()); }
int cudnn_version() { return static_cast<int>(cudnnGetVersion()); }

}  // namespace ignis::cuda
