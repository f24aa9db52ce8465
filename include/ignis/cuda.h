// Questions about CUDA devices. These never throw: without a GPU, a driver, or a CUDA build
// they answer "none".
#pragma once

namespace ignis::cuda {

/// True when Ignis was built with CUDA and at least one device is usable.
bool is_available();
/// Number of usable CUDA devices (0 without a GPU or a CUDA build).
int device_count();
/// True when this build of Ignis contains the CUDA backend.
bool is_built();

}  // namespace ignis::cuda
