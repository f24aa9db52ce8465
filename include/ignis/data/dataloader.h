// DataLoader: batches of a Dataset in sampler order, optionally prepared ahead by worker
// threads. `for (auto& [x, y] : loader)` reads the first two fields of each batch.
//
// Order: each begin() starts a new epoch (0, 1, 2 ... unless set_epoch() says otherwise). With
// shuffle, epoch e visits randperm(n) drawn from Generator(seed) at offset e * 2^40 — a
// different, reproducible order per epoch. A custom Sampler replaces this (a distributed
// sampler plugs in here).
//
// Workers: with num_workers > 0, threads (each running its ops on one OpenMP thread, like
// PyTorch's workers) build the batches in order of claim, at most
// prefetch_factor * num_workers batches ahead of the consumer, and the loader hands them out in
// order, so the batches are the same whatever the worker count. Stopping early (break, the
// iterator or the loader going away) stops and joins the workers; an exception in a worker is
// rethrown by the iterator at that batch.
//
// On a GPU (device = cuda): a tensor-backed data set that fits lives on the device and each
// batch is gathered and transformed there; other data sets' batches are pinned and copied
// on a copy stream one batch ahead (Note [Loader on a GPU], src/data/dataloader.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "ignis/data/dataset.h"
#include "ignis/device.h"

namespace ignis::data {

/// One collated batch: a contiguous tensor per field (batch dim first), the data set indices
/// of its samples (in batch order) and the epoch it belongs to.
struct Batch {
  std::vector<Tensor> fields;
  std::vector<int64_t> indices;
  int64_t epoch = 0;

  Tensor& x() { return fields.at(0); }
  Tensor& y() { return fields.at(1); }
  int64_t size() const { return int64_t(indices.size()); }
  // Tuple protocol for structured bindings: [x, y] = fields 0 and 1.
  template <size_t I>
  Tensor& get() & {
    return fields.at(I);
  }
  template <size_t I>
  const Tensor& get() const& {
    return fields.at(I);
  }
};

/// Yields the sample order of each epoch; the loader cuts it into batches.
class Sampler {
 public:
  virtual ~Sampler() = default;
  /// Indices of the samples to visit in epoch `epoch`, in order.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  /// How many indices each epoch yields.
  virtual int64_t size() const = 0;
};
/// 0, 1, ..., n-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n) : n_(n) {}
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
};
/// randperm(n) from Generator(seed) at offset epoch * 2^40.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {}
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override { return n_; }

 private:
  int64_t n_;
  uint64_t seed_;
};

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;  ///< shuffle seed (RandomSampler)
  bool drop_last = false;
  std::shared_ptr<const Sampler> sampler;  ///< replaces shuffle when set
  int num_workers = 0;                     ///< 0: batches built on the calling thread
  int prefetch_factor = 2;                 ///< batches ahead per worker
  /// Host batches in page-locked memory (with a CUDA build and device; else ignored).
  bool pin_memory = false;
  /// Where batches go. On a CUDA device host batches are always pinned and copied on a copy
  /// stream ahead of use (Note [Loader on a GPU], dataloader.cpp).
  std::optional<Device> device;
  /// GPU-resident data sets: with a CUDA `device`, a TensorDataset (or a Subset of one)
  /// whose samples take at most this share of the device's available memory is copied there
  /// once (uint8 stays uint8) and each batch is gathered, then transformed, on the GPU. 0
  /// turns it off.
  double gpu_resident_fraction = 0.5;
  /// Applied to each batch after collation and the device copy (e.g. a transforms Compose).
  std::function<void(Batch&)> transform;
};

namespace detail {
class EpochRun;
}

class DataLoader {
 public:
  DataLoader(DatasetPtr dataset, DataLoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  struct Sentinel {};
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    explicit Iterator(std::shared_ptr<detail::EpochRun> run);
    Batch& operator*() { return batch_; }
    Batch* operator->() { return &batch_; }
    Iterator& operator++();
    bool operator==(Sentinel) const { return done_; }

   private:
    std::shared_ptr<detail::EpochRun> run_;
    Batch batch_;
    bool done_ = true;
  };

  /// Starts the next epoch (stopping any earlier one still running).
  Iterator begin();
  Sentinel end() const { return {}; }
  /// Number of batches per epoch.
  int64_t size() const;
  /// The epoch the next begin() starts.
  void set_epoch(int64_t epoch) { next_epoch_ = epoch; }
  int64_t next_epoch() const { return next_epoch_; }
  const DataLoaderOptions& options() const { return options_; }
  /// Whether the whole data set lives on the GPU (see gpu_resident_fraction).
  bool gpu_resident() const { return !resident_.empty(); }

 private:
  DatasetPtr dataset_;
  DataLoaderOptions options_;
  std::vector<Tensor> resident_;  ///< the data set's tensors on the device, when resident
  void make_resident();
  std::shared_ptr<const Sampler> sampler_;
  int64_t next_epoch_ = 0;
  std::weak_ptr<detail::EpochRun> current_;
};

}  // namespace ignis::data

template <>
struct std::tuple_size<ignis::data::Batch> : std::integral_constant<size_t, 2> {};
template <size_t I>
struct std::tuple_element<I, ignis::data::Batch> {
  using type = ignis::Tensor;
};
