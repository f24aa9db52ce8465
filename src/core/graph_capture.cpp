// The per-thread capture state of src/core/graph_capture.h.
#include "core/graph_capture.h"

#include <fmt/format.h>

#include <atomic>

#include "ignis/cuda_graph.h"

namespace ignis::detail {
namespace {
thread_local std::vector<ReplayHook>* sink = nullptr;
thread_local uint64_t captures_started = 0;
std::atomic<int> threads_capturing{0};
}

bool capture_underway() { return sink != nullptr; }

bool capture_underway_in_process() { return threads_capturing.load() > 0; }

uint64_t capture_number() { return sink ? captures_started : 0; }

void add_replay_hook(ReplayHook hook) {
  if (sink) sink->push_back(std::move(hook));
}

void set_capture_sink(std::vector<ReplayHook>* s) {
  if (s && !sink) ++captures_started, ++threads_capturing;
  if (!s && sink) --threads_capturing;
  sink = s;
}

void refuse_during_capture(const char* op, const char* why) {
  if (sink) throw CaptureError(fmt::format("[{}] {}, which a CUDA graph cannot capture", op, why));
}

}  // namespace ignis::detail
