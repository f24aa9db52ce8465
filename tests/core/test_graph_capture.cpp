// The device-independent side of CUDA graph capture, on the CPU: the per-thread capture state
// that ops consult (src/core/graph_capture.h), what refuses to run inside a capture, and
// capture_step's argument checks and eager path for CPU inputs. Captures themselves need a
// GPU (tests/cuda/test_cuda_graph.cpp).
#include <gtest/gtest.h>

#include <thread>

#include "core/graph_capture.h"
#include "ignis/cuda_graph.h"
#include "ignis/ignis.h"

namespace ignis {
namespace {

/// Marks this thread as capturing for a scope, as cuda::Graph does.
struct FakeCapture {
  std::vector<detail::ReplayHook> hooks;
  FakeCapture() { detail::set_capture_sink(&hooks); }
  ~FakeCapture() { detail::set_capture_sink(nullptr); }
};

TEST(GraphCapture, StateIsPerThreadAndCollectsReplayHooks) {
  EXPECT_FALSE(detail::capture_underway());
  int calls = 0;
  detail::add_replay_hook([&] { ++calls; });  // no capture: dropped
  {
    FakeCapture capture;
    EXPECT_TRUE(detail::capture_underway());
    bool other_thread_sees_it = true;
    std::thread([&] { other_thread_sees_it = detail::capture_underway(); }).join();
    EXPECT_FALSE(other_thread_sees_it);
    detail::add_replay_hook([&] { ++calls; });
    ASSERT_EQ(capture.hooks.size(), 1u);
    capture.hooks[0]();
  }
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(detail::capture_underway());
}

TEST(GraphCapture, EachCaptureHasANumberOfItsOwn) {
  EXPECT_EQ(detail::capture_number(), 0u);
  uint64_t first = 0;
  {
    FakeCapture capture;
    first = detail::capture_number();
    EXPECT_GT(first, 0u);
  }
  EXPECT_EQ(detail::capture_number(), 0u);
  FakeCapture again;
  EXPECT_EQ(detail::capture_number(), first + 1);
}

TEST(GraphCapture, RefusalNamesTheOpOnlyDuringACapture) {
  detail::refuse_during_capture("index_scan", "reads back");  // no capture: nothing happens
  FakeCapture capture;
  try {
    detail::refuse_during_capture("index_scan", "checks its indices with a read-back");
    FAIL() << "expected CaptureError";
  } catch (const CaptureError& e) {
    EXPECT_STREQ(
        e.what(),
        "[index_scan] checks its indices with a read-back, which a CUDA graph cannot "
        "capture");
  }
}

// Before any CUDA call: cudaHostAlloc would invalidate the capture with a bare CUDA error.
TEST(GraphCapture, PinMemoryRefusesInsideACapture) {
  const Tensor host = ones({4});
  FakeCapture capture;
  try {
    (void)host.pin_memory();
    FAIL() << "expected CaptureError";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("[pin_memory]"), std::string::npos) << e.what();
  }
}

TEST(GraphCapture, OptimizersWithHostStepCountsRefuseInsideACapture) {
  Tensor p = ones({4}).requires_grad_();
  (p * 2).sum().backward();
  optim::Adam adam({p}, {.lr = 0.1});
  {
    FakeCapture capture;
    EXPECT_THROW(adam.step(), CaptureError);
  }
  EXPECT_TRUE(adam.state(0, 0).empty()) << "the refusal comes before any state changes";
  adam.step();  // outside a capture it runs
  EXPECT_FALSE(adam.state(0, 0).empty());
}

TEST(CaptureStep, ChecksItsArgumentsAndRunsCpuStepsEagerly) {
  EXPECT_THROW(cuda::capture_step({}), ValueError);
  EXPECT_THROW(
      cuda::capture_step([](const Tensor& x, const Tensor&) { return x; }, {.warmup_steps = 0}),
      ValueError);
  int calls = 0;
  auto step = cuda::capture_step([&](const Tensor& x, const Tensor& y) {
    ++calls;
    return x + y;
  });
  for (int i = 0; i < 6; ++i) {
    const Tensor out = step(full({3}, double(i)), ones({3}));
    EXPECT_DOUBLE_EQ(out[2].item<double>(), i + 1.0);  // a fresh result each call
  }
  EXPECT_EQ(calls, 6);
  EXPECT_FALSE(step.captured());
  EXPECT_FALSE(step.fell_back());
}

}  // namespace
}  // namespace ignis
