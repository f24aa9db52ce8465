// The loader's epoch: batch index lists are fixed when the epoch starts, so which thread
// builds a batch never changes its contents. Workers claim batch numbers in order from a
// shared counter, bounded by a window ahead of the consumer (the prefetch depth); finished
// batches wait in a map until the consumer reaches them.
//
// Note [Loader shutdown]
// ----------------------
// An EpochRun is owned by the iterators of its epoch; the loader keeps only a weak_ptr. Its
// destructor (last iterator gone: loop finished, `break`, or an exception) and
// DataLoader::~DataLoader / the next begin() (via stop()) set `stop_` under the mutex and wake
// every waiter; a worker checks `stop_` before claiming a batch and after finishing one, so it
// exits after at most the batch it is building, and the destructor joins all of them. Workers
// hold the data set through a shared_ptr, so destroying the loader first is safe too.
//
// Note [Loader on a GPU]
// ----------------------
// GPU-resident data sets (DataLoaderOptions::gpu_resident_fraction): the loader copies a
// TensorDataset's tensors to the device once, and each epoch uploads its whole sample order
// once (pinned, asynchronous); a batch is then a gather of rows on the device (the gather
// kernel without index_select's bounds scan, whose result would be read back from the GPU at
// every batch: the order is checked on the host when the epoch starts). The transform runs
// on the device batch (the fused crop / flip / normalise kernel draws the same windows as on
// the CPU). Nothing is copied and nothing waits on the host per batch; workers are not used.
//
// Host data sets with a CUDA device: each collated field is copied into pinned memory and
// from there to the device on a copy stream (one per device). The destination is allocated
// on the consumer's stream (its current stream when the epoch starts; its memory returns
// there when freed, whichever thread built the batch); the copy stream first waits for an
// event on that stream (the block may have just been freed by work still queued there), and
// an event after the copies is what that stream waits for when the batch is handed out. The transform therefore runs at hand-out, after that
// wait. Without workers, the loader builds batch k + 1 (starting its copy) before handing out
// batch k, so the copy overlaps the compute on batch k; with workers, the prefetch window
// does the same.
#include "ignis/data/dataloader.h"

#include <omp.h>

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "ignis/cuda.h"
#include "ignis/ops.h"
#include "ops/index_kernels.h"

namespace ignis::data {

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> v(static_cast<size_t>(n_));
  std::iota(v.begin(), v.end(), int64_t(0));
  return v;
}

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  if (n_ == 0) return {};
  Generator gen(seed_);
  gen.set_offset(uint64_t(epoch) << 40);
  return randperm(n_, kInt64, &gen).to_vector<int64_t>();
}

namespace detail {

namespace {
/// The copy stream of a device, shared by all loaders (streams live until the process exits).
cuda::Stream copy_stream(int device) {
  static std::mutex m;
  static std::map<int, cuda::Stream> streams;
  std::lock_guard<std::mutex> lock(m);
  auto it = streams.find(device);
  if (it == streams.end()) it = streams.emplace(device, cuda::Stream::create(device)).first;
  return it->second;
}

/// The rows `rows` (1-D int64 on t's device, every value already checked) of t.
Tensor gather_rows(const Tensor& t, const Tensor& rows) {
  Shape shape = t.sizes();
  shape[0] = rows.size(0);
  Tensor out = empty(shape, {t.dtype(), t.device()});
  Shape strides(shape.size(), 0);
  strides[0] = rows.stride(0);
  const Tensor index = ignis::detail::make_view(rows, shape, strides, rows.storage_offset());
  if (out.numel() > 0)
    ignis::detail::gather_kernel.get(t.device())(ignis::detail::GatherArgs{out, t, index, 0});
  return out;
}

/// Copies host fields to device dev on the copy stream (Note [Loader on a GPU]), into memory
/// of the consumer's stream `compute` (a worker thread's own current stream may be another);
/// returns the event that marks the end of the copies.
cuda::Event copy_to_device(std::vector<Tensor>& fields, Device dev, const cuda::Stream& compute) {
  const cuda::Stream copier = copy_stream(dev.index);
  cuda::StreamGuard on_compute(compute);  // the destinations come from the consumer's pool
  std::vector<Tensor> out;
  // A field already on dev (a data set of CUDA tensors that is not made resident) stays.
  for (const Tensor& f : fields)
    out.push_back(f.device() == dev ? f : empty(f.sizes(), {f.dtype(), dev}));
  cuda::Event allocated;
  allocated.record(compute);
  copier.wait(allocated);
  cuda::Event copied;
  try {
    cuda::StreamGuard on_copier(copier);
    for (size_t k = 0; k < fields.size(); ++k) {
      if (fields[k].device() == dev) continue;
      if (!fields[k].is_cpu()) {  // on another GPU: a device-to-device copy
        Tensor(out[k]).copy_(fields[k]);
        continue;
      }
      const Tensor pinned = fields[k].contiguous().pin_memory();
      if (pinned.numel() > 0)
        ignis::detail::transfer_kernel.get(dev)(out[k], pinned, /*non_blocking=*/true);
    }
    copied.record(copier);
  } catch (...) {
    // The copies already queued write into blocks of the compute stream's pool, which go back
    // to it as `out` is destroyed: make the compute stream wait for them before it reuses
    // them, or, when not even that can be queued, wait for them here.
    try {
      cuda::Event queued;
      queued.record(copier);
      compute.wait(queued);
    } catch (...) {
      try {
        copier.synchronize();
      } catch (...) {  // the first error is the one to report
      }
    }
    throw;
  }
  fields = std::move(out);
  return copied;
}
}  // namespace

class EpochRun {
 public:
  EpochRun(
      DatasetPtr dataset,
      const DataLoaderOptions& opt,
      std::vector<std::vector<int64_t>> batches,
      int64_t epoch,
      std::vector<Tensor> resident)
      : dataset_(std::move(dataset)),
        opt_(opt),
        batches_(std::move(batches)),
        epoch_(epoch),
        resident_(std::move(resident)) {
    device_copy_ = resident_.empty() && opt_.device && opt_.device->is_cuda();
    // The stream the consumer's work runs on, fixed for the epoch: batches are copied into its
    // memory and it waits for their copies, from whichever thread builds them.
    if (device_copy_) consumer_.emplace(cuda::current_stream(opt_.device->index));
    if (!resident_.empty()) {
      upload_order();
      return;  // nothing for workers to do: the batches are built on the GPU
    }
    const int workers = std::max(0, opt_.num_workers);
    window_ = int64_t(workers) * std::max(1, opt_.prefetch_factor);
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }

  ~EpochRun() {
    stop();
    for (auto& t : threads_) t.join();
    // Batches never handed out free their device memory into the compute stream's pool: the
    // compute stream must not reuse it before their copies have finished writing it.
    if (staged_) wait_for_dropped_copy(*staged_);
    for (auto& [b, r] : ready_) wait_for_dropped_copy(r);
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    work_cv_.notify_all();
    ready_cv_.notify_all();
  }

  /// The next batch in order; false at the end of the epoch or after stop().
  bool next(Batch& out) {
    if (threads_.empty()) {
      const int64_t n = int64_t(batches_.size());
      if (stopped()) return false;
      if (!staged_) {
        if (consumed_ >= n) return false;
        staged_ = build_caught(consumed_);
      }
      Result r = std::move(*staged_);
      staged_.reset();
      ++consumed_;
      // Start the next batch's copy now, so it overlaps the caller's work on this one.
      if (device_copy_ && consumed_ < n) staged_ = build_caught(consumed_);
      hand_out(r, out);
      return true;
    }
    std::unique_lock<std::mutex> lock(m_);
    if (consumed_ >= int64_t(batches_.size())) return false;
    ready_cv_.wait(lock, [&] { return stop_ || ready_.count(consumed_) > 0; });
    if (stop_) return false;
    auto node = ready_.extract(consumed_++);
    lock.unlock();
    work_cv_.notify_all();
    hand_out(node.mapped(), out);
    return true;
  }

 private:
  std::optional<cuda::Stream> consumer_;  ///< the consumer's stream (device copies only)

  struct Result {
    Batch batch;
    std::exception_ptr error;
    std::optional<cuda::Event> copied;  ///< the end of the batch's copy to the device
  };

  /// Later work on the compute stream waits for the batch's copy to the device, if any.
  /// When that wait cannot be queued, the host waits for the copy before reporting the
  /// error, so the batch's memory is not reused while the copy still writes it.
  void wait_for_copy(const Result& r) const {
    if (!r.copied) return;
    try {
      consumer_->wait(*r.copied);
    } catch (...) {
      try {
        r.copied->synchronize();
      } catch (...) {  // the first error is the one to report
      }
      throw;
    }
  }
  /// The same for a batch dropped in the destructor or a worker, where a throw would end the
  /// process: once the device has failed (a sticky error, the runtime unloading at exit) the
  /// ordering no longer matters, so the error is reported and the earlier one left to surface.
  void wait_for_dropped_copy(const Result& r) const noexcept {
    try {
      wait_for_copy(r);
    } catch (const std::exception& e) {
      std::fprintf(
          stderr, "ignis: DataLoader could not order a dropped batch's copy: %s\n", e.what());
    }
  }

  /// The consumer's side of a batch: its error, the wait for its copy, the transform.
  void hand_out(Result& r, Batch& out) const {
    if (r.error) std::rethrow_exception(r.error);
    if (r.copied) {
      wait_for_copy(r);
      if (opt_.transform) opt_.transform(r.batch);
    }
    out = std::move(r.batch);
  }

  /// Checks the epoch's order against the data set and copies it to the device in one piece.
  void upload_order() {
    const int64_t n = resident_[0].size(0);
    std::vector<int64_t> flat;
    for (const auto& b : batches_) {
      starts_.push_back(int64_t(flat.size()));
      for (int64_t i : b) {
        IGNIS_CHECK(i >= 0 && i < n, IndexError,
                    "[DataLoader] sampler index {} out of range for a data set of {}", i, n);
        flat.push_back(i);
      }
    }
    if (flat.empty()) return;
    order_ = tensor(flat, std::nullopt, {kInt64, Device::cpu()})
                 .pin_memory()
                 .to(*opt_.device, /*non_blocking=*/true);
  }

  Result build_caught(int64_t b) const {
    Result r;
    try {
      r = build(b);
    } catch (...) {
      r.error = std::current_exception();
    }
    return r;
  }

  bool stopped() {
    std::lock_guard<std::mutex> lock(m_);
    return stop_;
  }

  Result build(int64_t b) const {
    Result r;
    Batch& batch = r.batch;
    batch.indices = batches_[size_t(b)];
    batch.epoch = epoch_;
    if (!resident_.empty()) {
      const Tensor rows = order_.narrow(0, starts_[size_t(b)], int64_t(batch.indices.size()));
      for (const Tensor& t : resident_) batch.fields.push_back(gather_rows(t, rows));
    } else {
      batch.fields = dataset_->get_batch(batch.indices);
      for (auto& f : batch.fields) f = f.contiguous();
      if (device_copy_) {
        r.copied = copy_to_device(batch.fields, *opt_.device, *consumer_);
        return r;  // transformed at hand-out, after the wait for the copy
      }
      for (auto& f : batch.fields) {
        if (opt_.pin_memory && cuda::is_available()) f = f.pin_memory();
        if (opt_.device) f = f.to(*opt_.device);
      }
    }
    if (opt_.transform) opt_.transform(batch);
    return r;
  }

  void work() {
    // One OpenMP thread per worker (the parallelism is across workers, as PyTorch's workers
    // run with torch.set_num_threads(1)); a new std::thread would otherwise start a full
    // OpenMP team in every op and the workers would fight over the cores.
    omp_set_num_threads(1);
    const int64_t n = int64_t(batches_.size());
    for (;;) {
      int64_t b;
      {
        std::unique_lock<std::mutex> lock(m_);
        work_cv_.wait(
            lock, [&] { return stop_ || claimed_ >= n || claimed_ < consumed_ + window_; });
        if (stop_ || claimed_ >= n) return;
        b = claimed_++;
      }
      Result r = build_caught(b);
      {
        std::lock_guard<std::mutex> lock(m_);
        if (stop_) {
          wait_for_dropped_copy(r);  // its memory must not be reused before the copy ends
          return;
        }
        ready_.emplace(b, std::move(r));
      }
      ready_cv_.notify_all();
    }
  }

  DatasetPtr dataset_;
  DataLoaderOptions opt_;
  std::vector<std::vector<int64_t>> batches_;
  int64_t epoch_;
  std::vector<Tensor> resident_;  // GPU-resident: the data set's tensors on the device
  Tensor order_;                  // GPU-resident: the epoch's sample order on the device
  std::vector<int64_t> starts_;   // GPU-resident: where each batch starts in order_
  bool device_copy_ = false;      // host batches copied to a CUDA device on the copy stream
  std::optional<Result> staged_;  // without workers: the next batch, its copy under way
  int64_t window_ = 0;
  std::mutex m_;
  std::condition_variable work_cv_, ready_cv_;
  std::map<int64_t, Result> ready_;
  int64_t claimed_ = 0, consumed_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace detail

DataLoader::DataLoader(DatasetPtr dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  IGNIS_CHECK(dataset_ != nullptr, ValueError, "[DataLoader] no data set");
  IGNIS_CHECK(
      options_.batch_size >= 1,
      ValueError,
      "[DataLoader] batch_size must be >= 1, got {}",
      options_.batch_size);
  IGNIS_CHECK(
      options_.num_workers >= 0,
      ValueError,
      "[DataLoader] num_workers must be >= 0, got {}",
      options_.num_workers);
  IGNIS_CHECK(
      options_.gpu_resident_fraction >= 0 && options_.gpu_resident_fraction <= 1,
      ValueError,
      "[DataLoader] gpu_resident_fraction must lie in [0, 1], got {}",
      options_.gpu_resident_fraction);
  make_resident();
  if (options_.sampler)
    sampler_ = options_.sampler;
  else if (options_.shuffle)
    sampler_ = std::make_shared<RandomSampler>(dataset_->size(), options_.seed);
  else
    sampler_ = std::make_shared<SequentialSampler>(dataset_->size());
}

void DataLoader::make_resident() {
  if (!options_.device || !options_.device->is_cuda() || options_.gpu_resident_fraction <= 0 ||
      !cuda::is_available())
    return;
  // Tensor-backed: a TensorDataset, or a Subset of one (a split), whose rows are then picked
  // once here, so the device holds only the subset, indexed as the loader indexes it.
  const Dataset* base = dataset_.get();
  const std::vector<int64_t>* picked = nullptr;
  if (const auto* subset = dynamic_cast<const Subset*>(base)) {
    picked = &subset->indices();
    base = subset->base().get();
  }
  const auto* tensors = dynamic_cast<const TensorDataset*>(base);
  if (!tensors) return;
  const int dev = options_.device->index;
  size_t bytes = 0;
  for (const Tensor& t : tensors->tensors()) {
    const int64_t rows = picked ? int64_t(picked->size()) : t.size(0);
    bytes += size_t(rows * (t.size(0) > 0 ? t.numel() / t.size(0) : 0)) * itemsize(t.dtype());
  }
  // Available: what the driver calls free plus what Ignis's allocator holds cached, unused.
  const cuda::MemoryStats stats = cuda::memory_stats(dev);
  const double available =
      double(cuda::mem_get_info(dev).free) + double(stats.reserved - stats.allocated);
  if (double(bytes) > options_.gpu_resident_fraction * available) return;
  const Tensor rows = picked ? tensor(*picked, std::nullopt, {kInt64, Device::cpu()}) : Tensor();
  for (const Tensor& t : tensors->tensors()) {
    const Tensor host = picked ? index_select(t.cpu(), 0, rows) : t.contiguous();
    resident_.push_back(host.to(*options_.device));
  }
}

DataLoader::~DataLoader() {
  if (auto run = current_.lock()) run->stop();
}

int64_t DataLoader::size() const {
  const int64_t n = sampler_->size(), bs = options_.batch_size;
  return options_.drop_last ? n / bs : (n + bs - 1) / bs;
}

DataLoader::Iterator DataLoader::begin() {
  if (auto run = current_.lock()) run->stop();
  const int64_t epoch = next_epoch_++;
  const std::vector<int64_t> order = sampler_->indices(epoch);
  std::vector<std::vector<int64_t>> batches;
  const int64_t bs = options_.batch_size;
  for (size_t start = 0; start < order.size(); start += size_t(bs)) {
    const size_t end = std::min(order.size(), start + size_t(bs));
    if (options_.drop_last && int64_t(end - start) < bs) break;
    batches.emplace_back(order.begin() + int64_t(start), order.begin() + int64_t(end));
  }
  auto run = std::make_shared<detail::EpochRun>(
      dataset_, options_, std::move(batches), epoch, resident_);
  current_ = run;
  return Iterator(std::move(run));
}

DataLoader::Iterator::Iterator(std::shared_ptr<detail::EpochRun> run) : run_(std::move(run)) {
  ++*this;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  done_ = !run_ || !run_->next(batch_);
  if (done_) run_.reset();  // the last owner joins the workers here
  return *this;
}

}  // namespace ignis::data
