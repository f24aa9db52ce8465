// Streams and events. Each device gets one compute stream created by Ignis on first use,
// non-blocking with respect to the legacy default stream (so other libraries' work on the
// legacy stream does not serialise with ours). The current stream is per thread and device.
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/deferred_errors.h"
#include "ignis/cuda.h"

namespace ignis::cuda {
namespace {

cudaStream_t create_stream(int device) {
  detail::DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  IGNIS_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  return s;
}

/// Ignis's compute stream of each device, created once (never destroyed: work may still be
/// queued on it at exit). The tables are never destroyed either: a storage freed during
/// static destruction asks for its device's stream (Note [Streams of a free]).
std::vector<std::atomic<cudaStream_t>>& compute_streams() {
  static auto* streams =
      new std::vector<std::atomic<cudaStream_t>>(static_cast<size_t>(device_count()));
  return *streams;
}

cudaStream_t compute_stream(int device) {
  static auto* once = new std::vector<std::once_flag>(static_cast<size_t>(device_count()));
  auto& streams = compute_streams();
  std::call_once((*once)[size_t(device)], [&] {
    streams[size_t(device)].store(create_stream(device), std::memory_order_release);
  });
  return streams[size_t(device)].load(std::memory_order_relaxed);
}

// Note [Streams of a free]
// The device allocator treats a block freed while another stream is current as used there
// (Note [Device caching allocator]), so a storage's deleter asks for the thread's current
// stream, and deleters also run while a thread exits and the process tears down, after the
// thread's table of chosen streams may be gone. The table therefore announces itself through
// a plain pointer that its destructor clears: a deleter that finds no table reads the compute
// stream, which is what a thread without a table has chosen (a StreamGuard's own destructor
// has long restored it by then).
struct ThreadStreams {
  std::vector<cudaStream_t> chosen;  // per device; null: the compute stream
  ThreadStreams();
  ~ThreadStreams();
};
thread_local ThreadStreams* live_thread_streams = nullptr;  // trivially destructible
ThreadStreams::ThreadStreams() : chosen(static_cast<size_t>(device_count()), nullptr) {
  live_thread_streams = this;
}
ThreadStreams::~ThreadStreams() { live_thread_streams = nullptr; }

/// This thread's choice per device (null: the compute stream).
std::vector<cudaStream_t>& thread_streams() {
  thread_local ThreadStreams table;
  return table.chosen;
}

int resolve(int device, const char* op) {
  if (device < 0) return detail::checked_current_device(op);
  detail::require_device(device, op);
  return device;
}

}  // namespace

namespace detail {
cudaStream_t current_cuda_stream(int device) {
  cudaStream_t s = thread_streams()[size_t(device)];
  return s ? s : compute_stream(device);
}

cudaStream_t current_cuda_stream_for_deleter(int device) {
  const ThreadStreams* table = live_thread_streams;
  cudaStream_t s = table ? table->chosen[size_t(device)] : nullptr;
  // Not created yet: no work was ever queued on it (and a deleter creates no stream).
  return s ? s : compute_streams()[size_t(device)].load(std::memory_order_acquire);
}
}  // namespace detail

Stream Stream::create(int device) {
  device = resolve(device, "Stream::create");
  return Stream(device, create_stream(device));
}

void Stream::synchronize() const {
  IGNIS_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)), "Stream::synchronize");
  detail::raise_kernel_errors(device_);
}

bool Stream::query() const {
  const cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(handle_));
  if (detail::still_running(err)) return false;
  IGNIS_CUDA_CHECK(err, "Stream::query");
  return true;
}

void Stream::wait(const Event& event) const {
  if (!event.handle()) return;  // never recorded: nothing to wait for
  IGNIS_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(handle_),
                                       static_cast<cudaEvent_t>(event.handle()), 0),
                   "Stream::wait");
}

Stream current_stream(int device) {
  device = resolve(device, "current_stream");
  return Stream(device, detail::current_cuda_stream(device));
}

Stream default_stream(int device) {
  device = resolve(device, "default_stream");
  return Stream(device, compute_stream(device));
}

void set_current_stream(const Stream& stream) {
  detail::require_device(stream.device(), "set_current_stream");
  thread_streams()[size_t(stream.device())] = static_cast<cudaStream_t>(stream.handle());
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device())) {
  set_current_stream(stream);
}
StreamGuard::~StreamGuard() { set_current_stream(previous_); }

struct Event::Impl {
  cudaEvent_t event = nullptr;
  int device = -1;
  ~Impl() {
    if (event) cudaEventDestroy(event);  // errors at teardown cannot be reported
  }
};

Event::Event(bool enable_timing) : impl_(std::make_shared<Impl>()), timing_(enable_timing) {}

void Event::record() { record(current_stream()); }

void Event::record(const Stream& stream) {
  if (!impl_->event) {
    detail::DeviceGuard guard(stream.device());
    IGNIS_CUDA_CHECK(
        cudaEventCreateWithFlags(&impl_->event, timing_ ? cudaEventDefault : cudaEventDisableTiming),
        "Event::record");
    impl_->device = stream.device();
  }
  IGNIS_CHECK(impl_->device == stream.device(), DeviceError,
              "[Event::record] event of cuda:{} recorded on a stream of cuda:{}", impl_->device,
              stream.device());
  detail::DeviceGuard guard(stream.device());
  IGNIS_CUDA_CHECK(cudaEventRecord(impl_->event, static_cast<cudaStream_t>(stream.handle())),
                   "Event::record");
}

void Event::synchronize() const {
  if (impl_->event) IGNIS_CUDA_CHECK(cudaEventSynchronize(impl_->event), "Event::synchronize");
  detail::raise_kernel_errors(impl_->device);  // -1 (every device) for an unrecorded event
}

bool Event::query() const {
  if (!impl_->event) return true;
  const cudaError_t err = cudaEventQuery(impl_->event);
  if (detail::still_running(err)) return false;
  IGNIS_CUDA_CHECK(err, "Event::query");
  return true;
}

float Event::elapsed_time(const Event& end) const {
  IGNIS_CHECK(timing_ && end.timing_, ValueError,
              "[Event::elapsed_time] both events need enable_timing = true");
  IGNIS_CHECK(impl_->event && end.impl_->event, ValueError,
              "[Event::elapsed_time] both events must be recorded first");
  float ms = 0;
  IGNIS_CUDA_CHECK(cudaEventElapsedTime(&ms, impl_->event, end.impl_->event),
                   "Event::elapsed_time");
  return ms;
}

void* Event::handle() const { return impl_->event; }

}  // namespace ignis::cuda
