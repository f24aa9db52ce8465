// Built instead of the CUDA backend when the CUDA toolkit is absent: no devices, no kernels.
#include "ignis/cuda.h"

namespace ignis::cuda {
bool is_built() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
DeviceProperties device_properties(int) { return {}; }
int driver_version() { return 0; }
int runtime_version() { return 0; }
int cublas_version() { return 0; }
int cudnn_version() { return 0; }
}  // namespace ignis::cuda

namespace ignis::detail {
void register_cuda_kernels() {}
}  // namespace ignis::detail
