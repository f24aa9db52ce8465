// DistributedSampler without mpirun (ranks given explicitly): shard sizes, disjoint shards
// that cover the data set, PyTorch's padding and drop_last rules, one shuffle per epoch shared
// by the ranks, and the DataLoader's sampler hook. Also what the distributed API says before
// init(), and what init() says in a build without MPI.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "ignis/ignis.h"

namespace ig = ignis;
namespace data = ignis::data;
namespace dist = ignis::distributed;

namespace {
std::vector<std::vector<int64_t>> shards(int64_t n, int replicas, bool shuffle, bool drop_last,
                                         int64_t epoch, uint64_t seed = 3) {
  std::vector<std::vector<int64_t>> out;
  for (int r = 0; r < replicas; ++r)
    out.push_back(data::DistributedSampler(n, {.num_replicas = replicas, .rank = r,
                                               .shuffle = shuffle, .seed = seed,
                                               .drop_last = drop_last})
                      .indices(epoch));
  return out;
}
}  // namespace

TEST(DistributedSampler, ShardsAreEqualSizedDisjointAndCovering) {
  for (int64_t n : {0, 1, 7, 10, 11, 12, 100})
    for (int replicas : {1, 2, 3, 4})
      for (bool shuffle : {false, true})
        for (bool drop_last : {false, true}) {
          SCOPED_TRACE(fmt::format("n={} replicas={} shuffle={} drop_last={}", n, replicas,
                                   shuffle, drop_last));
          const int64_t per_rank = drop_last ? n / replicas : (n + replicas - 1) / replicas;
          std::map<int64_t, int> count;
          for (const auto& s : shards(n, replicas, shuffle, drop_last, 5)) {
            EXPECT_EQ(int64_t(s.size()), per_rank);
            for (int64_t i : s) {
              EXPECT_TRUE(i >= 0 && i < n) << i;
              ++count[i];
            }
          }
          const int64_t padded = per_rank * replicas - n;  // > 0 only without drop_last
          if (drop_last) {
            // Distinct samples, only the tail (fewer than replicas) left out.
            EXPECT_EQ(int64_t(count.size()), per_rank * replicas);
            for (auto [i, c] : count) EXPECT_EQ(c, 1) << i;
          } else {
            // Every sample visited; exactly `padded` visits are repeats.
            EXPECT_EQ(int64_t(count.size()), n);
            int64_t repeats = 0;
            for (auto [i, c] : count) repeats += c - 1;
            EXPECT_EQ(repeats, padded);
          }
        }
}

// PyTorch's rule, written out: order 0..9 padded with 0, 1; rank r takes positions r, r+4 ...
TEST(DistributedSampler, PaddingAndDropLastMatchPyTorch) {
  auto padded = shards(10, 4, false, false, 0);
  EXPECT_EQ(padded, (std::vector<std::vector<int64_t>>{{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}}));
  auto dropped = shards(10, 4, false, true, 0);
  EXPECT_EQ(dropped, (std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Fewer samples than ranks: the order repeats as often as needed.
  EXPECT_EQ(shards(2, 3, false, false, 0), (std::vector<std::vector<int64_t>>{{0}, {1}, {0}}));
}

TEST(DistributedSampler, ShuffleIsPerEpochAndReproducible) {
  auto e0 = shards(100, 3, true, false, 0), e0_again = shards(100, 3, true, false, 0);
  auto e1 = shards(100, 3, true, false, 1);
  EXPECT_EQ(e0, e0_again);  // same seed and epoch: same shards on every rank's own sampler
  EXPECT_NE(e0, e1);        // a new epoch reshuffles
  EXPECT_NE(e0, shards(100, 3, true, false, 0, /*seed=*/4));
  EXPECT_NE(e0, shards(100, 3, false, false, 0));  // it does shuffle
}

TEST(DistributedSampler, PlugsIntoTheDataLoader) {
  auto ds = std::make_shared<data::TensorDataset>(
      std::vector<ig::Tensor>{ig::arange(10, ig::kInt64), ig::arange(10, ig::kInt64)});
  auto sampler = std::make_shared<data::DistributedSampler>(
      10, data::DistributedSamplerOptions{.num_replicas = 3, .rank = 1, .seed = 9});
  data::DataLoader loader(ds, {.batch_size = 2, .sampler = sampler});
  loader.set_epoch(4);
  std::vector<int64_t> seen;
  for (auto& batch : loader)
    for (int64_t v : batch.x().to_vector<int64_t>()) seen.push_back(v);
  EXPECT_EQ(seen, sampler->indices(4));
  EXPECT_EQ(loader.size(), 2);  // 4 samples per rank in batches of 2
}

TEST(DistributedSampler, RejectsARankOutsideTheReplicas) {
  EXPECT_THROW(data::DistributedSampler(10, {.num_replicas = 2, .rank = 2}), ig::ValueError);
}

TEST(Distributed, SaysWhatIsMissingBeforeInit) {
  EXPECT_FALSE(dist::is_initialized());
  try {
    dist::rank();
    ADD_FAILURE() << "no error";
  } catch (const dist::DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("[rank] distributed::init() has not been called"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(data::DistributedSampler(10), dist::DistributedError);
  ig::Tensor t = ig::ones({2});
  EXPECT_THROW(dist::all_reduce(t), dist::DistributedError);
}

// Only in builds without MPI (IGNIS_DISTRIBUTED=OFF); the mpi.* tests cover init() otherwise.
TEST(Distributed, InitSaysIgnisWasBuiltWithoutMpi) {
  if (dist::is_available()) GTEST_SKIP() << "built with MPI";
  try {
    dist::init();
    ADD_FAILURE() << "no error";
  } catch (const dist::DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("Ignis was built without MPI"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(dist::is_initialized());
}
