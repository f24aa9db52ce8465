// cuda::capture_step (include/ignis/cuda_graph.h): warm-up on a side stream, capture of one
// step into a cuda::Graph over static input buffers, replay, and the eager fallback. Plain
// C++ over the public CUDA API, so it is built with or without the toolkit (CPU inputs run
// the step eagerly and never touch CUDA).
//
// The side stream (as PyTorch's torch.cuda.graph uses): the warm-up steps and the capture run
// there (one per thread and device, shared by the thread's captured steps: streams live until
// the process exits, so a stream per CapturedStep would accumulate; a thread's steps run one
// at a time, and another thread's capture must not see this one's work), ordered after the caller's stream with events, so the blocks that the caching
// allocator hands to the warm-up (per stream) are not the ones the capture's pool would
// shadow, and CUDA's rule that the capturing stream not be the legacy stream holds. Replays
// run on the caller's current stream, after the copies of x and y into the static inputs.
#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <vector>

#include "core/error.h"
#include "ignis/cuda_graph.h"
#include "ignis/ops.h"

namespace ignis::cuda {

struct CapturedStep::Impl {
  Fn fn;
  CaptureOptions options;
  int eager_steps = 0;  // warm-up steps done
  bool fell_back = false;
  std::string reason;
  Graph graph;
  Tensor static_x, static_y, out;
};

namespace {
/// This thread's side stream of `device`, created on first use. By value: a step may start
/// another device's stream, which grows the vector.
Stream side_stream(int device) {
  thread_local std::vector<std::optional<Stream>> streams;
  if (streams.size() <= size_t(device)) streams.resize(size_t(device) + 1);
  auto& s = streams[size_t(device)];
  if (!s) s = Stream::create(device);
  return *s;
}

bool same_layout(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && a.device() == b.device();
}

/// Runs body on the side stream, ordered after the current stream's work and before its
/// later work, also when body throws (the eager retry after a failed warm-up or capture must
/// not race the side stream's kernels still writing parameters).
template <class Body>
Tensor on_side_stream(const Stream& side, Body&& body) {
  const Stream caller = current_stream(side.device());
  Event ready;
  ready.record(caller);
  side.wait(ready);
  const auto join = [&] {
    Event done;
    done.record(side);
    caller.wait(done);
  };
  Tensor out;
  try {
    StreamGuard guard(side);
    out = body();
  } catch (...) {
    try {
      join();
    } catch (...) {
      // The caller's stream cannot be made to wait: the host waits for the side stream, so
      // that the eager retry does not race its kernels. The body's error is the one to report.
      try {
        side.synchronize();
      } catch (...) {
      }
    }
    throw;
  }
  join();
  return out;
}
}  // namespace

void CaptureOptions::default_fallback_message(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
}

CapturedStep::CapturedStep(Fn step, CaptureOptions options) : impl_(std::make_shared<Impl>()) {
  IGNIS_CHECK(bool(step), ValueError, "[capture_step] the step function is empty");
  IGNIS_CHECK(
      options.warmup_steps >= 1,
      ValueError,
      "[capture_step] warmup_steps must be at least 1 (got {}): optimizers create "
      "their state and libraries choose their algorithms in the eager steps",
      options.warmup_steps);
  impl_->fn = std::move(step);
  impl_->options = std::move(options);
}

Tensor CapturedStep::operator()(const Tensor& x, const Tensor& y) {
  Impl& s = *impl_;
  if (s.fell_back || !x.defined() || !x.device().is_cuda()) return s.fn(x, y);
  if (s.graph.captured()) {
    // A batch of another shape (the last of an epoch) cannot use the graph's buffers.
    if (!same_layout(x, s.static_x) || !same_layout(y, s.static_y)) return s.fn(x, y);
    s.static_x.copy_(x);
    s.static_y.copy_(y);
    s.graph.replay();
    return s.out;
  }
  const Stream side = side_stream(x.device().index);
  if (s.eager_steps < s.options.warmup_steps) {
    ++s.eager_steps;
    return on_side_stream(side, [&] { return s.fn(x, y); });
  }
  s.static_x = empty_like(x);
  s.static_y = empty_like(y);
  s.static_x.copy_(x);
  s.static_y.copy_(y);
  try {
    on_side_stream(side, [&] {  // the side stream is current: the step's ops queue there
      s.graph.capture_begin(side);
      try {
        // detach: the loss's autograd history would keep the capture's saved tensors alive.
        s.out = s.fn(s.static_x, s.static_y).detach();
        s.graph.capture_end();
      } catch (...) {
        // Out of capture mode before on_side_stream joins the side stream to the caller's
        // (an event recorded inside a capture would pull the caller's stream into it).
        s.graph.abort_capture();
        throw;
      }
      return s.out;
    });
  } catch (const std::exception& e) {
    s.graph.abort_capture();
    s.out = s.static_x = s.static_y = Tensor();
    if (!s.options.on_fallback) throw;
    s.fell_back = true;
    s.reason = e.what();
    s.options.on_fallback(fmt::format(
        "ignis: the training step cannot be captured into a CUDA graph, running it eagerly: {}",
        s.reason));
    return s.fn(x, y);
  }
  s.graph.replay();  // the capture ran nothing: this call's step happens here
  return s.out;
}

bool CapturedStep::captured() const { return impl_->graph.captured(); }
bool CapturedStep::fell_back() const { return impl_->fell_back; }
const std::string& CapturedStep::fallback_reason() const { return impl_->reason; }

CapturedStep capture_step(CapturedStep::Fn step, CaptureOptions options) {
  return CapturedStep(std::move(step), std::move(options));
}

}  // namespace ignis::cuda
