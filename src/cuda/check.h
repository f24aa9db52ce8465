// Checking every CUDA runtime and cuBLAS(Lt) call: a failure becomes an ignis exception that
// names the call, the op it served and the source line, e.g.
//   [matmul] cublasLtMatmul(...) failed: CUBLAS_STATUS_NOT_SUPPORTED (src/cuda/gemm.cpp:120)
// Out-of-memory becomes OutOfMemoryError, a missing or unusable device DeviceError, anything
// else Error. Host code only (also used from .cu files' host functions).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

namespace ignis::cuda::detail {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* op,
                                   const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* op,
                                     const char* file, int line);

inline void check_cuda(cudaError_t err, const char* call, const char* op, const char* file,
                       int line) {
  if (err != cudaSuccess) throw_cuda_error(err, call, op, file, line);
}
/// True when a query (cudaEventQuery, cudaStreamQuery) says the work is still running. The
/// runtime also keeps cudaErrorNotReady as the thread's last error, which the next
/// IGNIS_CUDA_CHECK_LAUNCH (cudaGetLastError) would report as a failed launch: it is cleared
/// here, as PyTorch's stream and event queries do.
inline bool still_running(cudaError_t err) {
  if (err != cudaErrorNotReady) return false;
  (void)cudaGetLastError();
  return true;
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* op,
                         const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, op, file, line);
}

}  // namespace ignis::cuda::detail

/// IGNIS_CUDA_CHECK(cudaMalloc(&p, n), "allocator"): throws on any error but cudaSuccess.
#define IGNIS_CUDA_CHECK(call, op) \
  ::ignis::cuda::detail::check_cuda((call), #call, (op), __FILE__, __LINE__)
#define IGNIS_CUBLAS_CHECK(call, op) \
  ::ignis::cuda::detail::check_cublas((call), #call, (op), __FILE__, __LINE__)
/// After a kernel launch: a bad configuration shows up here, not at the next call.
#define IGNIS_CUDA_CHECK_LAUNCH(op) IGNIS_CUDA_CHECK(cudaGetLastError(), (op))
