// The loader: length, drop_last, sequential and shuffled order (reproducible per epoch,
// different across epochs), a custom sampler, identical batches with 0 and 2 workers, and
// stopping early or destroying the loader mid-epoch with workers busy (the test finishing is
// the no-hang check).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "ignis/data/dataloader.h"
#include "ignis/ops.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  return std::make_shared<TensorDataset>(
      std::vector<Tensor>{arange(n * 3, kFloat32).reshape({n, 3}), arange(n, kInt64)});
}

/// All labels of one epoch, batch by batch.
std::vector<std::vector<int64_t>> epoch_labels(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& [x, y] : loader) {
    EXPECT_TRUE(x.is_contiguous());
    EXPECT_EQ(x.size(0), y.size(0));
    // Field 0 row i is 3*label .. 3*label+2: the fields stay aligned.
    const auto xv = x.to_vector<float>();
    const auto yv = y.to_vector<int64_t>();
    for (size_t i = 0; i < yv.size(); ++i) EXPECT_EQ(xv[3 * i], float(3 * yv[i]));
    out.push_back(yv);
  }
  return out;
}

TEST(DataLoader, SequentialLengthAndDropLast) {
  DataLoader loader(numbered(10), {.batch_size = 4});
  EXPECT_EQ(loader.size(), 3);
  auto b = epoch_labels(loader);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(b[2], (std::vector<int64_t>{8, 9}));
  DataLoader dropping(numbered(10), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(dropping.size(), 2);
  EXPECT_EQ(epoch_labels(dropping).size(), 2u);
}

TEST(DataLoader, ShuffleReproduciblePerEpochAndDifferentAcross) {
  DataLoaderOptions opt{.batch_size = 7, .shuffle = true, .seed = 3};
  DataLoader a(numbered(50), opt), b(numbered(50), opt);
  auto a0 = epoch_labels(a), a1 = epoch_labels(a);
  auto b0 = epoch_labels(b), b1 = epoch_labels(b);
  EXPECT_EQ(a0, b0);
  EXPECT_EQ(a1, b1);
  EXPECT_NE(a0, a1);
  // Each epoch is a permutation, and equals RandomSampler's order.
  std::vector<int64_t> flat;
  for (auto& v : a1) flat.insert(flat.end(), v.begin(), v.end());
  EXPECT_EQ(flat, RandomSampler(50, 3).indices(1));
  std::sort(flat.begin(), flat.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(flat[size_t(i)], i);
  // set_epoch replays an epoch.
  a.set_epoch(0);
  EXPECT_EQ(epoch_labels(a), a0);
}

class EvenSampler : public Sampler {
 public:
  std::vector<int64_t> indices(int64_t epoch) const override { return {8, 6, 4, 2, 0}; }
  int64_t size() const override { return 5; }
};

TEST(DataLoader, SamplerHookAndDevice) {
  DataLoader loader(
      numbered(10),
      {.batch_size = 2,
       .sampler = std::make_shared<EvenSampler>(),
       .pin_memory = true,
       .device = Device::cpu()});
  EXPECT_EQ(loader.size(), 3);
  auto b = epoch_labels(loader);
  EXPECT_EQ(b, (std::vector<std::vector<int64_t>>{{8, 6}, {4, 2}, {0}}));
  auto it = loader.begin();
  EXPECT_EQ(it->indices, (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(it->epoch, 1);
}

TEST(DataLoader, WorkersGiveTheSameBatches) {
  for (int workers : {1, 2, 3}) {
    DataLoaderOptions opt{.batch_size = 5, .shuffle = true, .seed = 11};
    DataLoader serial(numbered(103), opt);
    opt.num_workers = workers;
    opt.prefetch_factor = 1;
    DataLoader parallel(numbered(103), opt);
    for (int e = 0; e < 2; ++e) EXPECT_EQ(epoch_labels(serial), epoch_labels(parallel)) << workers;
  }
}

/// A data set whose items take a while, to keep workers busy when the consumer leaves.
class SlowDataset : public Dataset {
 public:
  explicit SlowDataset(std::atomic<int>* built) : built_(built) {}
  int64_t size() const override { return 1000; }
  Example get(int64_t i) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ++*built_;
    return {full({2}, double(i)), scalar_tensor(i)};
  }

 private:
  std::atomic<int>* built_;
};

TEST(DataLoader, EarlyExitAndDestructionMidEpoch) {
  std::atomic<int> built{0};
  auto ds = std::make_shared<SlowDataset>(&built);
  {
    DataLoader loader(ds, {.batch_size = 4, .num_workers = 2, .prefetch_factor = 2});
    int seen = 0;
    for (auto& [x, y] : loader) {
      EXPECT_EQ(y.size(0), 4);
      if (++seen == 3) break;
    }
    // Prefetching is bounded: 3 consumed + at most 4 ahead + 2 in flight.
    EXPECT_LE(built.load(), 4 * (3 + 4 + 2));
    // A second epoch after the break starts cleanly.
    auto it = loader.begin();
    EXPECT_EQ(it->epoch, 1);
    // Destroying the loader while this iterator's workers run: they stop; the iterator ends.
  }
  // An iterator outliving its loader.
  std::optional<DataLoader::Iterator> kept;
  {
    DataLoader loader(ds, {.batch_size = 4, .num_workers = 2});
    kept = loader.begin();
  }
  ++*kept;  // stopped: ends instead of hanging
  EXPECT_TRUE(*kept == DataLoader::Sentinel{});
}

class ThrowingDataset : public Dataset {
 public:
  int64_t size() const override { return 20; }
  Example get(int64_t i) const override {
    if (i == 13) throw IOError("[ThrowingDataset] sample 13 unreadable");
    return {scalar_tensor(i)};
  }
};

TEST(DataLoader, WorkerErrorsReachTheConsumer) {
  for (int workers : {0, 2}) {
    DataLoader loader(
        std::make_shared<ThrowingDataset>(), {.batch_size = 5, .num_workers = workers});
    int ok = 0;
    EXPECT_THROW_MSG(
        for (auto& b
             : loader) {
          (void)b;
          ++ok;
        },
        IOError,
        "sample 13 unreadable");
    EXPECT_EQ(ok, 2);
  }
}

}  // namespace
}  // namespace ignis::testing
