// DistributedSampler: PyTorch's sharding rule (pad by wrapping around, or drop the tail, then
// take every num_replicas-th position starting at rank) over RandomSampler's epoch order.
#include "ignis/data/distributed_sampler.h"

#include "core/error.h"
#include "ignis/distributed.h"

namespace ignis::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : n_(dataset_size),
      replicas_(options.num_replicas >= 0 ? options.num_replicas : distributed::world_size()),
      rank_(options.rank >= 0 ? options.rank : distributed::rank()),
      options_(options) {
  IGNIS_CHECK(dataset_size >= 0, ValueError, "[DistributedSampler] negative data set size {}",
              dataset_size);
  IGNIS_CHECK(replicas_ > 0 && rank_ < replicas_, ValueError,
              "[DistributedSampler] rank {} is not in [0, {})", rank_, replicas_);
  num_samples_ = options.drop_last ? n_ / replicas_ : (n_ + replicas_ - 1) / replicas_;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order = options_.shuffle ? RandomSampler(n_, options_.seed).indices(epoch)
                                                : SequentialSampler(n_).indices(epoch);
  const int64_t total = num_samples_ * replicas_;
  // Padding repeats the order from its start (several times over when n < num_replicas).
  for (int64_t i = 0; int64_t(order.size()) < total; ++i) order.push_back(order[size_t(i)]);
  order.resize(size_t(total));
  std::vector<int64_t> mine;
  mine.reserve(size_t(num_samples_));
  for (int64_t i = rank_; i < total; i += replicas_) mine.push_back(order[size_t(i)]);
  return mine;
}

}  // namespace ignis::data
