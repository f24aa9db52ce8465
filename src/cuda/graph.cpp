// cuda::Graph: stream capture into a CUDA graph, its instantiation and replay, with the
// capture's allocations in a pool of their own (Note [Graph memory pools]).
//
// Note [Whole-step capture]
// - Capture mode is thread-local: calls that CUDA deems unsafe during a capture (a
//   synchronisation, a pageable copy) fail on the capturing thread only, so the DataLoader's
//   threads keep copying batches while the trainer captures.
// - The device is synchronised before the capture begins, so no eager work is still reading
//   memory that the capture's pool might take from the device, unless another thread is
//   capturing on the device: a device synchronisation invalidates every capture under way
//   on it, whatever the capture mode. Nothing is released then either (the allocator
//   releases nothing during a capture, and capture_begin skips its empty_cache), so the new
//   pool's segments are fresh cudaMallocs that no eager work can be using. Captures begin one
//   at a time, so two threads cannot both find no capture and synchronise.
// - Ops that would read back to the host or draw fresh random numbers refuse to run during a
//   capture with CaptureError (detail::refuse_during_capture), before CUDA invalidates the
//   capture, so the message names the op instead of a CUDA error code.
// - The raw cudaMalloc of a new pool segment runs in relaxed capture mode (it is legal during
//   a capture but "unsafe" for the thread-local mode's check).
#include <cuda_runtime.h>

#include <mutex>

#include "core/error.h"
#include "core/graph_capture.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "ignis/cuda_graph.h"

namespace ignis::cuda {

struct Graph::Impl {
  int device = -1;
  cudaStream_t stream = nullptr;
  cudaGraphExec_t exec = nullptr;
  ignis::detail::CachingAllocator::PoolId pool = 0;
  bool capturing = false;
  std::vector<ignis::detail::ReplayHook> hooks;

  void end_routing() {
    if (pool) detail::device_allocator(device).end_private_pool(pool);
    ignis::detail::set_capture_sink(nullptr);
    capturing = false;
  }
  void release() noexcept {
    if (exec) cudaGraphExecDestroy(exec);  // errors at teardown cannot be reported
    exec = nullptr;
    try {
      if (pool) detail::device_allocator(device).release_private_pool(pool);
    } catch (const std::exception&) {  // a failing cudaFree at teardown: the memory is lost
    }
    pool = 0;
    hooks.clear();
  }
};

Graph::Graph() : impl_(std::make_unique<Impl>()) {}
Graph::~Graph() { reset(); }
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    reset();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

void Graph::capture_begin(const Stream& stream) {
  IGNIS_CHECK(
      !impl_->capturing && !impl_->exec,
      ValueError,
      "[Graph::capture_begin] this graph already holds a capture; reset() it first");
  IGNIS_CHECK(
      !ignis::detail::capture_underway(),
      ValueError,
      "[Graph::capture_begin] this thread is already capturing another graph");
  Impl& g = *impl_;
  g.device = stream.device();
  detail::require_device(g.device, "Graph::capture_begin");
  // As PyTorch refuses its default stream: other threads queue work on Ignis's compute stream
  // (the DataLoader records its copy events there), which a capture would take in or fail on.
  IGNIS_CHECK(!(stream == default_stream(g.device)), ValueError,
              "[Graph::capture_begin] cannot capture on the compute stream, which other threads "
              "share; capture on a stream of its own (cuda::Stream::create)");
  detail::DeviceGuard guard(g.device);
  g.stream = static_cast<cudaStream_t>(stream.handle());
  static std::mutex one_begin_at_a_time;
  std::lock_guard<std::mutex> lock(one_begin_at_a_time);
  auto& allocator = detail::device_allocator(g.device);
  if (!allocator.capture_routing()) {  // Note [Whole-step capture]
    IGNIS_CUDA_CHECK(cudaDeviceSynchronize(), "Graph::capture_begin");
    // The eager warm-up's freed blocks sit in the general pools, which the capture's private
    // pool cannot use: they go back to the driver, so that a capture near the memory limit (a
    // batch chosen by --batch-size auto) can allocate its own instead of falling back.
    allocator.empty_cache();
  }
  g.pool =
      allocator.begin_private_pool(reinterpret_cast<ignis::detail::RawMemory::Stream>(g.stream));
  const cudaError_t err = cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    cudaGetLastError();
    g.end_routing();
    g.release();
    IGNIS_CUDA_CHECK(err, "Graph::capture_begin");
  }
  g.capturing = true;
  ignis::detail::set_capture_sink(&g.hooks);
}

void Graph::capture_end() {
  Impl& g = *impl_;
  IGNIS_CHECK(g.capturing, ValueError, "[Graph::capture_end] no capture is under way");
  detail::DeviceGuard guard(g.device);
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(g.stream, &graph);
  g.end_routing();
  if (err == cudaSuccess) err = cudaGraphInstantiate(&g.exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);  // the executable graph keeps what it needs
  if (err != cudaSuccess) {
    cudaGetLastError();  // capture errors are not sticky
    g.exec = nullptr;
    g.release();
    throw CaptureError(fmt::format(
        "[Graph::capture_end] the capture failed: {} (a host synchronisation or another call "
        "CUDA forbids during a capture ran inside it)",
        cudaGetErrorString(err)));
  }
}

void Graph::abort_capture() noexcept {
  Impl& g = *impl_;
  if (!g.capturing) return;
  detail::DeviceGuard guard(g.device);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(g.stream, &graph);  // fails when the capture was invalidated
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  g.end_routing();
  g.release();
}

void Graph::replay() {
  Impl& g = *impl_;
  IGNIS_CHECK(g.exec, ValueError, "[Graph::replay] nothing has been captured");
  detail::DeviceGuard guard(g.device);
  for (const auto& hook : g.hooks) hook();
  IGNIS_CUDA_CHECK(cudaGraphLaunch(g.exec, detail::current_cuda_stream(g.device)), "Graph::replay");
}

void Graph::reset() noexcept {
  if (!impl_) return;  // moved from
  abort_capture();
  // No device switch: destroying the executable graph needs none, and the pool's release
  // takes its own device guard (DeviceMemory::release); the caller's device stays current.
  if (impl_->exec || impl_->pool) impl_->release();
}

bool Graph::captured() const { return impl_ && impl_->exec; }

}  // namespace ignis::cuda
