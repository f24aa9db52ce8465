// DistributedSampler: the share of a data set one rank visits each epoch (PyTorch's
// torch.utils.data.DistributedSampler). Plug it into DataLoaderOptions::sampler; the loader's
// epoch (DataLoader::set_epoch, or the count of begin() calls) picks the shuffle, the same on
// every rank, so the ranks' shares are disjoint and together cover the data set.
#pragma once

#include <cstdint>
#include <vector>

#include "ignis/data/dataloader.h"

namespace ignis::data {

struct DistributedSamplerOptions {
  int num_replicas = -1;  ///< number of ranks; -1: distributed::world_size()
  int rank = -1;          ///< this rank; -1: distributed::rank()
  bool shuffle = true;    ///< a permutation per epoch, RandomSampler's (seed, epoch) order
  uint64_t seed = 0;      ///< must be the same on every rank
  /// Drop the tail so every rank gets floor(n / num_replicas) samples; otherwise pad with
  /// samples from the start of the order so every rank gets ceil(n / num_replicas).
  bool drop_last = false;
};

/// Rank r visits positions r, r + R, r + 2R ... of the epoch's (padded or cut) order.
/// Throws ValueError for a rank outside [0, num_replicas).
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options = {});
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return num_samples_; }
  int num_replicas() const { return replicas_; }
  int rank() const { return rank_; }

 private:
  int64_t n_;
  int replicas_;
  int rank_;
  DistributedSamplerOptions options_;
  int64_t num_samples_;
};

}  // namespace ignis::data
