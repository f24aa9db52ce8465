// Built instead of the CUDA backend when the CUDA toolkit is absent: no devices, no kernels.
// Queries answer "none"; everything that needs a device throws DeviceError saying why.
#include "core/error.h"
#include "ignis/cuda.h"
#include "ignis/cuda_graph.h"

namespace ignis::cuda {
namespace {
[[noreturn]] void no_cuda(const char* op) {
  throw DeviceError(fmt::format(
      "[{}] needs a CUDA device, but this build of Ignis has no cuda backend (it was built "
      "without the CUDA toolkit)",
      op));
}
}  // namespace

bool is_built() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
int current_device() { no_cuda("current_device"); }
void set_device(int) { no_cuda("set_device"); }
DeviceProperties get_device_properties(int) { no_cuda("get_device_properties"); }
MemoryInfo mem_get_info(int) { no_cuda("mem_get_info"); }
void synchronize(int) { no_cuda("synchronize"); }

Stream Stream::create(int) { no_cuda("Stream::create"); }
void Stream::synchronize() const { no_cuda("Stream::synchronize"); }
bool Stream::query() const { no_cuda("Stream::query"); }
void Stream::wait(const Event&) const { no_cuda("Stream::wait"); }
Stream current_stream(int) { no_cuda("current_stream"); }
Stream default_stream(int) { no_cuda("default_stream"); }
void set_current_stream(const Stream&) { no_cuda("set_current_stream"); }
StreamGuard::StreamGuard(const Stream& s) : previous_(s) { no_cuda("StreamGuard"); }
StreamGuard::~StreamGuard() = default;

struct Event::Impl {};
Event::Event(bool enable_timing) : timing_(enable_timing) {}
void Event::record() { no_cuda("Event::record"); }
void Event::record(const Stream&) { no_cuda("Event::record"); }
void Event::synchronize() const {}
bool Event::query() const { return true; }
float Event::elapsed_time(const Event&) const { no_cuda("Event::elapsed_time"); }
void* Event::handle() const { return nullptr; }

MemoryStats memory_stats(int) { no_cuda("memory_stats"); }
void reset_peak_memory_stats(int) { no_cuda("reset_peak_memory_stats"); }
void empty_cache() {}  // nothing cached
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }
void set_cudnn_benchmark(bool) {}
bool cudnn_benchmark() { return false; }
void set_cudnn_deterministic(bool) {}
bool cudnn_deterministic() { return false; }
int driver_version() { return 0; }
int runtime_version() { return 0; }
int cublas_version() { return 0; }
int cudnn_version() { return 0; }

struct Graph::Impl {};
Graph::Graph() : impl_(std::make_unique<Impl>()) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
void Graph::capture_begin(const Stream&) { no_cuda("Graph::capture_begin"); }
void Graph::capture_end() { no_cuda("Graph::capture_end"); }
void Graph::abort_capture() noexcept {}
void Graph::replay() { no_cuda("Graph::replay"); }
void Graph::reset() noexcept {}
bool Graph::captured() const { return false; }
}  // namespace ignis::cuda

namespace ignis::detail {
void register_cuda_kernels() {}
}  // namespace ignis::detail
