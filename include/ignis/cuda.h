// Questions about CUDA devices. These never throw: without a GPU, a driver, or a CUDA build
// they answer "none" (false, 0, empty).
#pragma once

#include <cstddef>
#include <string>

namespace ignis::cuda {

/// True when Ignis was built with CUDA and at least one device is usable.
bool is_available();
/// Number of usable CUDA devices (0 without a GPU or a CUDA build).
int device_count();
/// True when this build of Ignis contains the CUDA backend.
bool is_built();

/// What `ignis devices` shows of one GPU; all zero/empty for an index that is not a device.
struct DeviceProperties {
  std::string name;
  size_t total_memory = 0;  ///< bytes
  int major = 0, minor = 0;  ///< compute capability
  int multiprocessors = 0;
};
DeviceProperties device_properties(int index);

/// Versions as the libraries encode them (CUDA 12.4 = 12040; cuBLAS 12.4.5 = 120405; cuDNN
/// 9.1.0 = 90100); 0 without a CUDA build, and the driver's 0 without a driver.
int driver_version();
int runtime_version();
int cublas_version();
int cudnn_version();

}  // namespace ignis::cuda
