// The interface a collective backend implements (MPI for CPU tensors, NCCL for CUDA tensors)
// and the helpers the front end and the backends share. The front end (process_group.cpp)
// checks arguments and hands the backend contiguous tensors on the backend's device; a backend
// only moves bytes and reduces.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "ignis/distributed.h"

namespace ignis::distributed::detail {

/// Throws DistributedError "[op] rank R of N: message".
[[noreturn]] inline void fail(const char* op, int rank, int size, const std::string& message) {
  throw DistributedError(fmt::format("[{}] rank {} of {}: {}", op, rank, size, message));
}

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "mpi", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  std::chrono::milliseconds timeout() const { return timeout_; }
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }

  // Every tensor is contiguous and on this backend's device; shapes are checked.
  virtual WorkPtr all_reduce(Tensor buffer, ReduceOp op) = 0;
  virtual WorkPtr broadcast(Tensor buffer, int src) = 0;
  /// output holds size() chunks of input's numel, in rank order.
  virtual WorkPtr all_gather(Tensor output, Tensor input) = 0;
  /// input holds size() chunks of output's numel; chunk r's reduction goes to rank r.
  virtual WorkPtr reduce_scatter(Tensor output, Tensor input, ReduceOp op) = 0;
  virtual WorkPtr barrier() = 0;
  /// A backend over the same ranks with its own communicator.
  virtual std::shared_ptr<Backend> duplicate() const = 0;

 protected:
  std::chrono::milliseconds timeout_ = kDefaultTimeout;
};

/// A Work that has already finished.
class CompletedWork : public Work {
 public:
  bool is_completed() override { return true; }
  void wait() override {}
};

/// Runs `finish` once, right after `inner` completes (copying a staged result back, dividing
/// for Avg, converting a float32 round trip back to bf16).
class ThenWork : public Work {
 public:
  ThenWork(WorkPtr inner, std::function<void()> finish)
      : inner_(std::move(inner)), finish_(std::move(finish)) {}
  bool is_completed() override {
    if (!finish_) return true;
    if (!inner_->is_completed()) return false;
    run_finish();
    return true;
  }
  void wait() override {
    if (!finish_) return;
    inner_->wait();
    run_finish();
  }

 private:
  void run_finish() {
    auto f = std::move(finish_);
    finish_ = nullptr;
    f();
  }
  WorkPtr inner_;
  std::function<void()> finish_;
};

inline WorkPtr then(WorkPtr inner, std::function<void()> finish) {
  return std::make_shared<ThenWork>(std::move(inner), std::move(finish));
}

// Implemented by mpi_backend.cpp, or by no_mpi.cpp (which throws) in builds without MPI.
struct MpiWorld {
  std::shared_ptr<Backend> backend;
  int local_rank = 0;
};
/// MPI_Init (once), then a backend over a duplicate of MPI_COMM_WORLD.
MpiWorld mpi_init(std::chrono::milliseconds timeout);
void mpi_finalize();
[[noreturn]] void mpi_abort(int code);

/// The NCCL backend over the ranks of `bootstrap` on `device` (nccl_backend.cpp, or a stub that
/// throws in builds without CUDA). Collective: every rank of bootstrap must call it.
std::shared_ptr<Backend> make_nccl_backend(Backend& bootstrap, Device device,
                                           std::chrono::milliseconds timeout);

}  // namespace ignis::distributed::detail
