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
#include "ignis/data/dataloader.h"

#include <omp.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/error.h"
#include "ignis/ops.h"

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

class EpochRun {
 public:
  EpochRun(
      DatasetPtr dataset,
      const DataLoaderOptions& opt,
      std::vector<std::vector<int64_t>> batches,
      int64_t epoch)
      : dataset_(std::move(dataset)), opt_(opt), batches_(std::move(batches)), epoch_(epoch) {
    const int workers = std::max(0, opt_.num_workers);
    window_ = int64_t(workers) * std::max(1, opt_.prefetch_factor);
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }

  ~EpochRun() {
    stop();
    for (auto& t : threads_) t.join();
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
      if (consumed_ >= int64_t(batches_.size()) || stopped()) return false;
      out = build(consumed_++);
      return true;
    }
    std::unique_lock<std::mutex> lock(m_);
    if (consumed_ >= int64_t(batches_.size())) return false;
    ready_cv_.wait(lock, [&] { return stop_ || ready_.count(consumed_) > 0; });
    if (stop_) return false;
    auto node = ready_.extract(consumed_++);
    lock.unlock();
    work_cv_.notify_all();
    if (node.mapped().error) std::rethrow_exception(node.mapped().error);
    out = std::move(node.mapped().batch);
    return true;
  }

 private:
  struct Result {
    Batch batch;
    std::exception_ptr error;
  };

  bool stopped() {
    std::lock_guard<std::mutex> lock(m_);
    return stop_;
  }

  Batch build(int64_t b) const {
    Batch batch;
    batch.indices = batches_[size_t(b)];
    batch.epoch = epoch_;
    batch.fields = dataset_->get_batch(batch.indices);
    for (auto& f : batch.fields) {
      f = f.contiguous();
      if (opt_.device) f = f.to(*opt_.device);
    }
    if (opt_.transform) opt_.transform(batch);
    return batch;
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
      Result r;
      try {
        r.batch = build(b);
      } catch (...) {
        r.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(m_);
        if (stop_) return;
        ready_.emplace(b, std::move(r));
      }
      ready_cv_.notify_all();
    }
  }

  DatasetPtr dataset_;
  DataLoaderOptions opt_;
  std::vector<std::vector<int64_t>> batches_;
  int64_t epoch_;
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
  if (options_.sampler)
    sampler_ = options_.sampler;
  else if (options_.shuffle)
    sampler_ = std::make_shared<RandomSampler>(dataset_->size(), options_.seed);
  else
    sampler_ = std::make_shared<SequentialSampler>(dataset_->size());
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
  auto run = std::make_shared<detail::EpochRun>(dataset_, options_, std::move(batches), epoch);
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
