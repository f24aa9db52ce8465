// CUDA devices, streams, events and memory.
//
// The queries (is_built, is_available, device_count) never throw: without a GPU, a driver,
// or a CUDA build they answer "none". Everything that needs a device throws DeviceError
// saying why there is none (no CUDA build, no driver, no such device index).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ignis::cuda {

/// True when Ignis was built with CUDA and at least one device is usable.
bool is_available();
/// Number of usable CUDA devices (0 without a GPU or a CUDA build).
int device_count();
/// True when this build of Ignis contains the CUDA backend.
bool is_built();

/// The device new CUDA work of this thread goes to ("cuda" without an index means it).
int current_device();
/// Makes `index` this thread's current device; DeviceError if there is no such device.
void set_device(int index);

struct DeviceProperties {
  std::string name;                // e.g. "NVIDIA H200"
  size_t total_memory = 0;         // bytes
  int major = 0, minor = 0;        // compute capability, e.g. 9.0
  int multiprocessor_count = 0;
};
/// Properties of device `index` (-1: the current device).
DeviceProperties get_device_properties(int index = -1);

/// The device's free and total memory as the driver reports them (cudaMemGetInfo, as
/// torch.cuda.mem_get_info): blocks cached by Ignis's allocator count as used.
struct MemoryInfo {
  size_t free = 0;
  size_t total = 0;
};
MemoryInfo mem_get_info(int index = -1);

/// Waits until all work queued on every stream of device `index` (-1: current) has finished.
/// Like cudaDeviceSynchronize, it invalidates a CUDA graph capture that another thread has
/// under way on the device; wait for a Stream or an Event there instead.
void synchronize(int index = -1);

class Event;

/// A CUDA stream of one device. Ignis creates one compute stream per device (not the legacy
/// default stream) and uses it unless another is made current. Streams created here live
/// until the process exits (as PyTorch's stream pool), so a Stream is a cheap value.
class Stream {
 public:
  /// A new stream on device (-1: current), non-blocking with respect to the legacy stream.
  static Stream create(int device = -1);
  int device() const { return device_; }
  /// The cudaStream_t, for interoperating with other CUDA code.
  void* handle() const { return handle_; }
  /// Blocks until the work queued so far has finished.
  void synchronize() const;
  /// True when all queued work has finished.
  bool query() const;
  /// Later work on this stream waits for `event` (without blocking the host).
  void wait(const Event& event) const;
  friend bool operator==(const Stream& a, const Stream& b) {
    return a.device_ == b.device_ && a.handle_ == b.handle_;
  }

 private:
  Stream(int device, void* handle) : device_(device), handle_(handle) {}
  friend Stream current_stream(int);
  friend Stream default_stream(int);
  int device_ = 0;
  void* handle_ = nullptr;
};

/// This thread's current stream of device (-1: current device); Ignis's compute stream
/// unless set_current_stream chose another.
Stream current_stream(int device = -1);
/// Ignis's own compute stream of device (-1: current).
Stream default_stream(int device = -1);
/// Makes `stream` the current stream of its device for this thread.
void set_current_stream(const Stream& stream);

/// Makes a stream current for a scope, restoring the previous one.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

/// A CUDA event: a point in a stream's work. Created on its first record().
class Event {
 public:
  explicit Event(bool enable_timing = false);
  /// Marks the point after the work queued on stream so far (default: current stream).
  void record();
  void record(const Stream& stream);
  /// Blocks until the recorded work has finished (returns at once if never recorded).
  void synchronize() const;
  /// True when the recorded work has finished (or nothing was recorded).
  bool query() const;
  /// Milliseconds between this event and `end`; both recorded, completed, with timing.
  float elapsed_time(const Event& end) const;
  /// The cudaEvent_t (null before the first record).
  void* handle() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  bool timing_ = false;
};

/// Memory of one device's caching allocator (Note [Device caching allocator]).
struct MemoryStats {
  size_t allocated = 0;       // bytes held by live tensors (rounded to 512)
  size_t reserved = 0;        // bytes obtained with cudaMalloc (live + cached)
  size_t peak_allocated = 0;  // since start or reset_peak_memory_stats
  size_t peak_reserved = 0;
  size_t num_device_allocs = 0;  // cudaMalloc calls
  size_t num_device_frees = 0;   // cudaFree calls
  size_t num_alloc_retries = 0;  // allocations that released the cache and retried
  size_t num_ooms = 0;
};
MemoryStats memory_stats(int device = -1);
void reset_peak_memory_stats(int device = -1);
/// Releases every cached, unused block of every device (and of the pinned host cache).
void empty_cache();

/// Whether float32 matrix products may use TF32 tensor cores (10-bit mantissa inputs).
/// Off by default, so float32 results match the CPU's to float32 rounding (as PyTorch's
/// torch.backends.cuda.matmul.allow_tf32 = False).
void set_allow_tf32(bool allow);
bool allow_tf32();

/// cuDNN benchmark mode (torch.backends.cudnn.benchmark): when on, the first convolution of
/// each shape times cuDNN's candidate algorithms and keeps the fastest; off (the default),
/// cuDNN's heuristics choose. Either way the choice is cached per shape.
void set_cudnn_benchmark(bool on);
bool cudnn_benchmark();

/// Deterministic convolutions (torch.backends.cudnn.deterministic): when on, only algorithms
/// cuDNN reports as deterministic are used (no atomic accumulation), so repeated runs give
/// the same bits; a convolution with none throws NotImplementedError. Off by default.
void set_cudnn_deterministic(bool on);
bool cudnn_deterministic();

/// Versions as the libraries encode them (CUDA 12.4 = 12040; cuBLAS 12.4.5 = 120405; cuDNN
/// 9.1.0 = 90100); 0 without a CUDA build, and the driver's 0 without a driver. Never throw.
int driver_version();
int runtime_version();
int cublas_version();
int cudnn_version();

}  // namespace ignis::cuda
