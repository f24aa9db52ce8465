// The trainer's memory faults without a GPU: the --batch-size auto search driven by a fake
// trial step that runs out of memory above a threshold, and the out-of-memory message built
// from a real CachingAllocator failure on a fake device (pointers from a counter, a capacity
// that makes allocations fail). Expected values are worked out by hand in the comments or by
// brute force over thresholds.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "batch_search.h"
#include "core/caching_allocator.h"
#include "ignis/out_of_memory.h"
#include "options.h"
#include "out_of_memory_report.h"

namespace {
using ignis_cli::BatchSearchResult;
using ignis_cli::find_largest_batch;
using ignis_cli::TrainProgress;
using ignis_cli::UsageError;

constexpr size_t MiB = size_t(1) << 20, GiB = size_t(1) << 30;

// A trial step that fits when batch <= threshold, recording what it was asked.
struct FakeStep {
  int64_t threshold;
  std::vector<int64_t> tried;
  void operator()(int64_t batch) {
    tried.push_back(batch);
    if (batch > threshold)
      throw ignis::OutOfMemoryError("[fake] out of memory at " + std::to_string(batch));
  }
};

BatchSearchResult search(FakeStep& step, int64_t max_batch, int* releases = nullptr) {
  return find_largest_batch(
      [&](int64_t b) { step(b); },
      {.max_batch = max_batch, .keep = 0.9},
      [releases] {
        if (releases) ++*releases;
      });
}

TEST(BatchSearch, DoublesThenBisectsToTheBoundaryAndKeepsAMargin) {
  FakeStep step{1000, {}};
  int releases = 0;
  const BatchSearchResult r = search(step, 50000, &releases);
  // 1, 2, ..., 512 fit (10 trials), 1024 does not; bisection until the gap is within 1/64 of
  // the largest fit: 768, 896, 960, 992 fit, 1008 does not, 1000 fits (gap 8 <= 1000/64).
  EXPECT_EQ(r.largest_fit, 1000);
  EXPECT_EQ(r.smallest_oom, 1008);
  EXPECT_EQ(r.chosen, 900);  // floor(0.9 * 1000)
  ASSERT_EQ(r.trials, 17);
  EXPECT_EQ(releases, 17);
  EXPECT_EQ(std::vector<int64_t>(step.tried.begin() + 11, step.tried.end()),
            (std::vector<int64_t>{768, 896, 960, 992, 1008, 1000}));
  for (int i = 0; i <= 10; ++i) EXPECT_EQ(step.tried[size_t(i)], int64_t(1) << i);
  EXPECT_EQ(std::set<int64_t>(step.tried.begin(), step.tried.end()).size(), step.tried.size())
      << "a batch size was tried twice";
  EXPECT_NE(r.oom_message.find("out of memory at 1008"), std::string::npos) << r.oom_message;
  EXPECT_NE(r.explain().find("1000 fitted"), std::string::npos) << r.explain();
  EXPECT_NE(r.explain().find("1008 ran out of memory"), std::string::npos) << r.explain();
}

TEST(BatchSearch, FindsEveryBoundaryWithinAFraction) {
  // Brute force: for each threshold and cap, the largest fit is min(threshold, cap) exactly
  // below 128 and within 1/64 of it above; never a trial above the cap, and the number of
  // trials stays logarithmic.
  for (int64_t cap : {1, 7, 64, 100, 333}) {
    for (int64_t threshold = 1; threshold <= 400; ++threshold) {
      FakeStep step{threshold, {}};
      const BatchSearchResult r = search(step, cap);
      const int64_t want = std::min(threshold, cap);
      const std::string at = fmt::format("threshold {} cap {}", threshold, cap);
      ASSERT_LE(r.largest_fit, want) << at;
      if (threshold < cap) {
        ASSERT_GT(r.smallest_oom, threshold) << at;
        ASSERT_LE(r.smallest_oom - r.largest_fit, std::max<int64_t>(1, r.largest_fit / 64)) << at;
        if (want < 128) ASSERT_EQ(r.largest_fit, want) << at;
      } else {
        ASSERT_EQ(r.largest_fit, cap) << at;
        ASSERT_EQ(r.smallest_oom, 0) << at;
      }
      ASSERT_EQ(r.chosen, threshold < cap ? std::max<int64_t>(1, r.largest_fit * 9 / 10) : cap);
      for (int64_t b : step.tried) ASSERT_LE(b, cap);
      ASSERT_LE(r.trials, 2 * 9 + 2);  // log2(400) < 9 doublings and bisection steps
    }
  }
}

TEST(BatchSearch, TheTrainingPartCapsTheBatch) {
  FakeStep step{1 << 30, {}};
  const BatchSearchResult r = search(step, 300);
  // 1 ... 256 (9 trials), then the cap itself: everything fitted, no margin is needed.
  EXPECT_EQ(step.tried, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 300}));
  EXPECT_EQ(r.chosen, 300);
  EXPECT_EQ(r.smallest_oom, 0);
  EXPECT_NE(r.explain().find("whole training part, 300"), std::string::npos) << r.explain();
}

TEST(BatchSearch, EvenABatchOfOneFailingIsAClearError) {
  FakeStep step{0, {}};
  int releases = 0;
  try {
    search(step, 1000, &releases);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("--batch-size auto: even a batch of 1 does not fit"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("[fake] out of memory at 1"), std::string::npos) << msg;
  }
  EXPECT_EQ(step.tried, std::vector<int64_t>{1});
  EXPECT_EQ(releases, 1);  // released after the failed trial too
}

TEST(BatchSearch, OnlyOutOfMemoryMeansTooLarge) {
  // Any other failure of a trial is a real error, not a batch size to avoid.
  auto trial = [](int64_t batch) {
    if (batch >= 8) throw ignis::ValueError("[fake] broken model");
  };
  EXPECT_THROW(find_largest_batch(trial, {.max_batch = 100}), ignis::ValueError);
}

// A library's size limit (NotImplementedError once smaller batches ran: cuDNN refuses tensors
// of 2^31 elements) bounds the batch as memory does; at a batch of 1 it is a real error.
TEST(BatchSearch, ASizeLimitAboveAFittingBatchIsABoundary) {
  auto trial = [](int64_t batch) {
    if (batch > 300) throw ignis::NotImplementedError("[fake] beyond the 2^31-element limit");
  };
  const BatchSearchResult r = find_largest_batch(trial, {.max_batch = 1000, .keep = 0.9});
  EXPECT_EQ(r.largest_fit, 300);
  EXPECT_EQ(r.smallest_oom, 304);  // within 300/64 of the largest fit
  EXPECT_EQ(r.chosen, 270);
  EXPECT_TRUE(r.size_limit);
  EXPECT_NE(r.explain().find("304 exceeded a library's size limit"), std::string::npos)
      << r.explain();
  auto at_once = [](int64_t) { throw ignis::NotImplementedError("[fake] unsupported dtype"); };
  EXPECT_THROW(find_largest_batch(at_once, {.max_batch = 100}), ignis::NotImplementedError);
  // Memory at the boundary after a size limit higher up: the boundary's reason is reported.
  auto both = [](int64_t batch) {
    if (batch > 450) throw ignis::NotImplementedError("[fake] limit");
    if (batch > 400) throw ignis::OutOfMemoryError("[fake] out of memory");
  };
  const BatchSearchResult m = find_largest_batch(both, {.max_batch = 1000, .keep = 0.9});
  EXPECT_EQ(m.largest_fit, 400);
  EXPECT_FALSE(m.size_limit);
}

// A device of fixed capacity for the caching allocator (see tests/core/test_caching_allocator.cpp
// for the policy's own tests): addresses from a counter, nothing is ever touched.
class FakeDevice final : public ignis::detail::RawMemory {
 public:
  explicit FakeDevice(size_t capacity) : capacity_(capacity) {}
  void* allocate(size_t n) override {
    if (used_ + n > capacity_) return nullptr;
    used_ += n;
    next_ += n + 4096;
    return reinterpret_cast<void*>(next_);
  }
  void release(void*, size_t n) override { used_ -= n; }
  size_t free_bytes() override { return capacity_ - used_; }
  EventId record_event(Stream) override { return 1; }
  bool event_done(EventId) override { return true; }
  void wait_event(EventId) override {}
  void destroy_event(EventId) override {}

 private:
  size_t capacity_, used_ = 0;
  uintptr_t next_ = 1 << 20;
};

// A temporary run directory holding a checkpoint file.
struct RunDirWithCheckpoint {
  std::string dir =
      (std::filesystem::temp_directory_path() /
       ("ignis_oom_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
        ::testing::UnitTest::GetInstance()->current_test_info()->name()))
          .string();
  std::string checkpoint = dir + "/checkpoint.safetensors";
  RunDirWithCheckpoint() {
    std::filesystem::create_directories(dir);
    std::ofstream(checkpoint) << "checkpoint bytes";
  }
  ~RunDirWithCheckpoint() { std::filesystem::remove_all(dir); }
  std::string content() const {
    std::stringstream s;
    s << std::ifstream(checkpoint).rdbuf();
    return s.str();
  }
};

TEST(OutOfMemoryReport, TheAllocatorsFiguresWithTheBatchAndTheCheckpoint) {
  // 80 GiB of fake device, 78 GiB of live tensors: a 3 GiB request finds 2 GiB free.
  FakeDevice dev(80 * GiB);
  ignis::detail::CachingAllocator alloc(dev, "cuda:0");
  void* held = alloc.allocate(78 * GiB, 1);
  RunDirWithCheckpoint run;
  TrainProgress p;
  p.batch_size = 512;
  p.run_dir = run.dir;
  p.epoch = 2;
  p.step = 7;
  p.steps_per_epoch = 40;
  try {
    alloc.allocate(3 * GiB, 1);
    FAIL() << "expected OutOfMemoryError";
  } catch (const ignis::OutOfMemoryError& e) {
    EXPECT_EQ(
        ignis_cli::out_of_memory_message(e, p),
        "out of memory on cuda:0 at batch size 512 (epoch 2 step 7/40): tried to allocate "
        "3.00 GiB with 2.00 GiB free; Ignis holds 78.00 GiB allocated and 78.00 GiB reserved. "
        "Train with a smaller --batch-size (e.g. 256), or keep the batch of 512 with "
        "--accumulate 2 (micro-batches of 256), or train in mixed precision with --amp bf16, or "
        "let --batch-size auto find the largest that fits; the last checkpoint, " +
            run.checkpoint + ", is intact");
  }
  alloc.free(held);
}

TEST(OutOfMemoryReport, TrainingThatRunsOutBecomesAUsageErrorAndLeavesTheCheckpoint) {
  FakeDevice dev(30 * MiB);
  ignis::detail::CachingAllocator alloc(dev, "cuda:1");
  RunDirWithCheckpoint run;
  const std::string before = run.content();
  void* held = nullptr;
  try {
    ignis_cli::run_reporting_out_of_memory([&](TrainProgress& p) {
      p.batch_size = 90;
      p.accumulate = 2;  // 90 is not a multiple of 4: no --accumulate 4 suggestion
      p.run_dir = run.dir;
      held = alloc.allocate(20 * MiB, 1);
      alloc.allocate(12 * MiB, 1);  // 10 MiB free
      return 0;
    });
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "out of memory on cuda:1 at batch size 90: tried to allocate 12.00 MiB with 10.00 MiB "
        "free; Ignis holds 20.00 MiB allocated and 20.00 MiB reserved. Train with a smaller "
        "--batch-size (e.g. 45), or train in mixed precision with --amp bf16, or let "
        "--batch-size auto find the largest that fits; the last checkpoint, " +
            run.checkpoint + ", is intact");
  }
  EXPECT_EQ(run.content(), before);
  alloc.free(held);
  // Without an out-of-memory error the status and other errors pass through.
  EXPECT_EQ(ignis_cli::run_reporting_out_of_memory([](TrainProgress&) { return 7; }), 7);
  EXPECT_THROW(
      ignis_cli::run_reporting_out_of_memory(
          [](TrainProgress&) -> int { throw ignis::ValueError("[x] other"); }),
      ignis::ValueError);
}

TEST(OutOfMemoryReport, AnErrorWithoutFiguresKeepsItsOwnText) {
  // cuBLAS workspaces and the CPU allocator throw a plain OutOfMemoryError.
  TrainProgress p;
  p.batch_size = 1;
  p.run_dir = "runs/none-such";
  EXPECT_EQ(
      ignis_cli::out_of_memory_message(ignis::OutOfMemoryError("[cublas] alloc failed"), p),
      "out of memory at batch size 1 ([cublas] alloc failed). A batch of 1 is the smallest: train "
      "a smaller --model or on another --device; no checkpoint had been written yet");
}

}  // namespace
