// CUDA graphs: a stream's work captured once and replayed with one launch, and a training step
// captured whole in one call (capture_step). Replaying removes the per-kernel launch cost,
// which dominates the step of a small model.
//
//   auto step = ignis::cuda::capture_step([&](const Tensor& x, const Tensor& y) {
//     opt.zero_grad();
//     Tensor loss = nn::functional::cross_entropy(model(x), y);
//     loss.backward();
//     opt.step();
//     return loss;
//   });
//   for (auto& [x, y] : loader) Tensor loss = step(x, y);  // a device tensor; item() syncs
//
// What a captured step may do is what a graph can replay: no read-back to the host (item(),
// printing, .cpu(), index checks), no fresh random numbers, no shape that changes between
// steps. SGD's learning rate and momentum are read on the device, so schedulers work without
// recapturing.
// A step that breaks a rule throws CaptureError during the capture; capture_step then discards
// the graph, says so in one line and runs the step eagerly from then on.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "ignis/cuda.h"
#include "ignis/error.h"
#include "ignis/tensor.h"

namespace ignis {
/// Work that a CUDA graph cannot capture (a read-back to the host, fresh random numbers …)
/// was asked for while a graph was being captured; the message names the op.
class CaptureError : public Error {
  using Error::Error;
};
}  // namespace ignis

namespace ignis::cuda {

/// A captured CUDA graph (RAII: destroying it frees the graph and gives its memory pool back,
/// Note [Graph memory pools]). Movable, not copyable.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Starts capturing the work this thread queues on `stream` (make it current with a
  /// StreamGuard so ops queue there); allocations on it come from the graph's own pool.
  /// ValueError when this graph already holds a capture, the thread is capturing another, or
  /// `stream` is Ignis's compute stream (other threads queue work there: use a stream of its
  /// own, cuda::Stream::create).
  void capture_begin(const Stream& stream);
  /// Ends the capture and instantiates the graph. Throws CaptureError (and keeps nothing)
  /// when CUDA invalidated the capture, e.g. after a host synchronisation inside it.
  void capture_end();
  /// Ends a capture that failed with an exception and discards everything (never throws).
  void abort_capture() noexcept;
  /// Runs the graph on the current stream of its device, after the replay hooks (such as an
  /// optimizer refreshing its device learning rate and momentum). ValueError when nothing is
  /// captured.
  void replay();
  /// Discards the graph and gives its memory pool back.
  void reset() noexcept;
  /// True between a successful capture_end and reset.
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct CaptureOptions {
  /// Eager steps run on a side stream before the capture (at least 1: optimizers create their
  /// state and cuDNN and cuBLASLt choose their algorithms and workspaces there).
  int warmup_steps = 3;
  /// Called with one line when the step cannot be captured and runs eagerly from then on;
  /// the default writes it to stderr. Unset it to rethrow the capture's error instead.
  std::function<void(const std::string&)> on_fallback = default_fallback_message;
  static void default_fallback_message(const std::string& line);
};

/// A training step that captures itself into a CUDA graph on first use (see the top of this
/// file). Each call is one step: the first warmup_steps run eagerly, the next is captured and
/// replayed, later ones copy x and y into the graph's static inputs and replay. The returned
/// tensor is the graph's static output: the next call overwrites it (clone it to keep it).
/// CPU inputs, and inputs whose shape, dtype or device differ from the captured ones, run
/// the step eagerly.
class CapturedStep {
 public:
  using Fn = std::function<Tensor(const Tensor& x, const Tensor& y)>;
  CapturedStep(Fn step, CaptureOptions options);
  Tensor operator()(const Tensor& x, const Tensor& y);
  /// True once a graph has been captured and is being replayed.
  bool captured() const;
  /// True when the capture failed and the step runs eagerly; fallback_reason() says why.
  bool fell_back() const;
  const std::string& fallback_reason() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// Wraps a step function of (x, y) returning the loss into a CapturedStep.
CapturedStep capture_step(CapturedStep::Fn step, CaptureOptions options = {});

}  // namespace ignis::cuda
