// Devices through the CUDA runtime: counting, the current device, properties, synchronize,
// and the errors every CUDA call turns into. Any error from cudaGetDeviceCount (no driver,
// "CUDA driver version is insufficient", no device) means "no GPU" for the queries, never an
// exception or a crash; ops that need a device throw DeviceError with that reason.
#include <cublasLt.h>
#include <cuda.h>  // the driver's types, for its entry points (no driver library is linked)

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#if IGNIS_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/deferred_errors.h"
#include "ignis/cuda.h"

namespace ignis::cuda {
namespace {

struct DeviceCount {
  int count = 0;
  std::string why_none;  // the runtime's reason when count is 0
};

/// Never destroyed: allocators and graphs destroyed at exit still ask for the device count.
const DeviceCount& probe() {
  static const DeviceCount* probed = new DeviceCount([] {
    DeviceCount d;
    const cudaError_t err = cudaGetDeviceCount(&d.count);
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error so later calls start clean
      d.count = 0;
      d.why_none = fmt::format("{} ({})", cudaGetErrorString(err), cudaGetErrorName(err));
    } else if (d.count == 0) {
      d.why_none = "the CUDA runtime reports no devices";
    }
    return d;
  }());
  return *probed;
}

std::atomic<bool> g_allow_tf32{false};

/// The source path from "src/" on (build machines' absolute prefixes say nothing).
const char* short_path(const char* file) {
  const char* s = std::strstr(file, "src/");
  return s ? s : file;
}

}  // namespace

bool is_built() { return true; }
int device_count() { return probe().count; }
bool is_available() { return device_count() > 0; }

int current_device() { return detail::checked_current_device("current_device"); }

void set_device(int index) {
  detail::require_device(index, "set_device");
  IGNIS_CUDA_CHECK(cudaSetDevice(index), "set_device");
}

DeviceProperties get_device_properties(int index) {
  if (index < 0) index = current_device();
  detail::require_device(index, "get_device_properties");
  cudaDeviceProp p{};
  IGNIS_CUDA_CHECK(cudaGetDeviceProperties(&p, index), "get_device_properties");
  DeviceProperties out;
  out.name = p.name;
  out.total_memory = p.totalGlobalMem;
  out.major = p.major;
  out.minor = p.minor;
  out.multiprocessor_count = p.multiProcessorCount;
  return out;
}

MemoryInfo mem_get_info(int index) {
  if (index < 0) index = current_device();
  detail::require_device(index, "mem_get_info");
  detail::DeviceGuard guard(index);
  MemoryInfo info;
  IGNIS_CUDA_CHECK(cudaMemGetInfo(&info.free, &info.total), "mem_get_info");
  return info;
}

void synchronize(int index) {
  if (index < 0) index = current_device();
  detail::require_device(index, "synchronize");
  detail::DeviceGuard guard(index);
  IGNIS_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize");
  detail::raise_kernel_errors(index);
}

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

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
#if IGNIS_HAVE_CUDNN
int cudnn_version() { return static_cast<int>(cudnnGetVersion()); }
#else
int cudnn_version() { return 0; }  // built without cuDNN
#endif

namespace detail {

void require_device(int index, const char* op) {
  const DeviceCount& d = probe();
  IGNIS_CHECK(d.count > 0, DeviceError,
              "[{}] cuda:{} requested but no CUDA device is available: {}", op, index,
              d.why_none);
  IGNIS_CHECK(index >= 0 && index < d.count, DeviceError,
              "[{}] cuda:{} requested but only {} CUDA device{} present (cuda:0 .. cuda:{})", op,
              index, d.count, d.count == 1 ? " is" : "s are", d.count - 1);
}

int checked_current_device(const char* op) {
  require_device(0, op);
  int d = 0;
  IGNIS_CUDA_CHECK(cudaGetDevice(&d), op);
  return d;
}

// Note [Devices without a context]
// A thread starts with device 0 current, and cudaSetDevice creates the device's primary
// context (hundreds of MB of GPU memory) if it has none. A guard that restored device 0 after
// an op on cuda:1 would so put a context on GPU 0 in every process that only uses cuda:1 (each
// rank of a one-GPU-per-process job, through its data loader threads), and in
// exclusive-process compute mode make every process after the first fail. So the guard
// restores the previous device only when that device has a context already, and leaves the
// thread on its own device otherwise, as PyTorch does; pinned host memory is allocated with a
// device that has one. The driver's cuDevicePrimaryCtxGetState answers, reached through the
// runtime's entry-point lookup (Ignis does not link the driver library).
namespace {
using PrimaryContextState = CUresult (*)(CUdevice, unsigned int*, int*);
PrimaryContextState primary_context_state() {
  static const PrimaryContextState fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(
            "cuDevicePrimaryCtxGetState", &p, CUDART_VERSION, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return PrimaryContextState(nullptr);
    }
    return reinterpret_cast<PrimaryContextState>(p);
  }();
  return fn;
}
}  // namespace

bool has_primary_context(int index) {
  // A context once seen stays (only cudaDeviceReset ends one, and restoring the device then
  // makes a new one, as before this check): the guards of a multi-GPU thread ask the driver
  // once per device, not at every op.
  static std::atomic<uint64_t> seen{0};
  const uint64_t bit = index < 64 ? uint64_t(1) << index : 0;
  if (seen.load(std::memory_order_relaxed) & bit) return true;
  const PrimaryContextState state = primary_context_state();
  if (state == nullptr) return true;
  unsigned int flags = 0;
  int active = 0;
  if (state(CUdevice(index), &flags, &active) != CUDA_SUCCESS) return true;
  if (active != 0) seen.fetch_or(bit, std::memory_order_relaxed);
  return active != 0;
}

int device_with_context() {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) return 0;
  if (has_primary_context(current)) return current;
  for (int d = 0; d < device_count(); ++d)
    if (has_primary_context(d)) return d;
  return current;
}

DeviceGuard::DeviceGuard(int index) {
  int cur = 0;
  IGNIS_CUDA_CHECK(cudaGetDevice(&cur), "device guard");
  if (cur != index) {
    IGNIS_CUDA_CHECK(cudaSetDevice(index), "device guard");
    previous_ = cur;
  }
}

DeviceGuard::~DeviceGuard() {
  // Cannot fail for a device that was current; skipped where it would create a context.
  if (previous_ >= 0 && has_primary_context(previous_)) cudaSetDevice(previous_);
}

void throw_cuda_error(cudaError_t err, const char* call, const char* op, const char* file,
                      int line) {
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  const std::string msg = fmt::format("[{}] {} failed: {} ({}) at {}:{}", op, call,
                                      cudaGetErrorString(err), cudaGetErrorName(err),
                                      short_path(file), line);
  if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(msg);
  if (err == cudaErrorNoDevice || err == cudaErrorInvalidDevice ||
      err == cudaErrorInsufficientDriver)
    throw DeviceError(msg);
  throw Error(msg);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* op,
                        const char* file, int line) {
  const std::string msg =
      fmt::format("[{}] {} failed: {} ({}) at {}:{}", op, call, cublasLtGetStatusName(status),
                  cublasLtGetStatusString(status), short_path(file), line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemoryError(msg);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) throw NotImplementedError(msg);
  throw Error(msg);
}

}  // namespace detail
}  // namespace ignis::cuda
