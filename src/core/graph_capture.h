// What device-independent code needs to know about CUDA graph capture (Note [Whole-step
// capture], src/cuda/graph.cpp): whether this thread is capturing, and a way to leave host
// work that must run before every replay (optimizers refresh their device learning rates
// there). cuda::Graph sets the state; nothing here includes a CUDA header.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ignis::detail {

using ReplayHook = std::function<void()>;

/// True while a CUDA graph is being captured on this thread.
bool capture_underway();
/// True while any thread of the process captures a CUDA graph (memory that every device's
/// streams use, pinned host memory, must then neither be freed nor wait on events).
bool capture_underway_in_process();
/// Which capture of this thread is under way (1, 2, ...: a new number for each), 0 without
/// one: lets code add a replay hook once per capture.
uint64_t capture_number();
/// Runs hook on the host before every replay of the graph being captured on this thread; a
/// no-op without a capture.
void add_replay_hook(ReplayHook hook);
/// For cuda::Graph: where this thread's hooks go during its capture (null ends the capture).
void set_capture_sink(std::vector<ReplayHook>* sink);
/// Throws CaptureError "[op] <why>, which a CUDA graph cannot capture" during a capture.
void refuse_during_capture(const char* op, const char* why);

}  // namespace ignis::detail
