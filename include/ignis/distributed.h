// ignis::distributed: processes that train together. init() joins the job a launcher started
// (mpirun), a ProcessGroup runs collectives on tensors (all_reduce, broadcast, all_gather,
// reduce_scatter, barrier): over MPI for CPU tensors and over NCCL for CUDA tensors. The
// data-parallel wrapper is nn::DistributedDataParallel (ignis/nn/parallel.h); the sampler that
// shards a data set is data::DistributedSampler (ignis/data/distributed_sampler.h).
//
// Launch: `mpirun -np 4 ./train`. init() reads Open MPI's OMPI_COMM_WORLD_RANK / _SIZE /
// _LOCAL_RANK. torchrun's RANK / WORLD_SIZE / LOCAL_RANK are honoured only when they agree with
// the MPI job (they are checked, not trusted); MASTER_ADDR / MASTER_PORT are not used, because
// processes find each other through MPI, so a torchrun-style launch of separate single-process
// MPI jobs (WORLD_SIZE > 1 but an MPI world of 1) is rejected with a message saying to use mpirun.
//
// Errors (DistributedError) name the collective, the rank and what went wrong. A collective
// that does not finish within the group's timeout raises instead of hanging; the group cannot
// be used after that (the other ranks are in an unknown state): call abort() to end the job.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ignis/error.h"
#include "ignis/tensor.h"

namespace ignis::distributed {

/// A collective failed, timed out, or was called on a group that cannot run it.
class DistributedError : public Error {
  using Error::Error;
};

/// Reductions. Avg takes floating tensors only. On bool tensors Sum and Max are logical or,
/// Min is logical and.
enum class ReduceOp { Sum, Avg, Max, Min };
const char* reduce_op_name(ReduceOp op);

/// The default time a collective may take before it raises (PyTorch's NCCL default is 10 min).
inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::minutes(5);

/// A collective in flight (PyTorch's Work). wait() blocks until it finishes (or raises on
/// timeout); results are in the tensors only after wait() or is_completed() returned true.
class Work {
 public:
  virtual ~Work() = default;
  /// True when finished (never blocks).
  virtual bool is_completed() = 0;
  /// Blocks until finished. Throws DistributedError on timeout or failure.
  virtual void wait() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

namespace detail {
class Backend;
}

/// A set of ranks that run collectives together (PyTorch's ProcessGroup). Every rank of the
/// group must call the same collectives in the same order with tensors of the same shape and
/// dtype. CPU tensors go over MPI; CUDA tensors over NCCL (its communicator is created,
/// collectively, by the first CUDA collective). Inputs may be non-contiguous (they are staged
/// through a contiguous copy). With async_op the call returns at once; else it has finished.
class ProcessGroup {
 public:
  explicit ProcessGroup(std::shared_ptr<detail::Backend> cpu);
  ~ProcessGroup();
  int rank() const;
  int size() const;
  std::chrono::milliseconds timeout() const;
  void set_timeout(std::chrono::milliseconds timeout);

  /// Reduces `tensor` across ranks, in place on every rank.
  WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum, bool async_op = false);
  /// Copies rank src's `tensor` into `tensor` on every rank.
  WorkPtr broadcast(Tensor& tensor, int src = 0, bool async_op = false);
  /// output (first dim size() * input's first dim) = the ranks' inputs stacked in rank order.
  WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input, bool async_op = false);
  /// outputs[r] = rank r's input (outputs: size() tensors shaped like input).
  WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, bool async_op = false);
  /// Reduces input (first dim size() * output's first dim) across ranks and leaves chunk
  /// rank() of the result in output.
  WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum,
                                bool async_op = false);
  /// output = the reduction over ranks of inputs[rank()] (inputs: size() tensors like output).
  WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs,
                         ReduceOp op = ReduceOp::Sum, bool async_op = false);
  /// Returns when every rank has called barrier().
  WorkPtr barrier(bool async_op = false);
  /// A new group of the same ranks whose collectives never mix with this one's.
  std::shared_ptr<ProcessGroup> duplicate() const;

 private:
  detail::Backend& backend_for(const Tensor& t, const char* op);
  std::shared_ptr<detail::Backend> cpu_;
  std::shared_ptr<detail::Backend> cuda_;  // NCCL, made by the first CUDA collective
};

struct InitOptions {
  std::chrono::milliseconds timeout = kDefaultTimeout;
  /// The device of this process; default cuda:local_rank when GPUs are present, else cpu.
  std::optional<Device> device;
};

/// Joins the job (MPI_Init), reads the launcher's environment, picks this process's device
/// and creates the default group. Throws DistributedError when Ignis was built without MPI,
/// when already initialised, or when the environment contradicts the MPI job.
void init(InitOptions options = {});
bool is_initialized();
/// True when this build of Ignis has MPI (the CMake option IGNIS_DISTRIBUTED).
bool is_available();
/// This process's rank in the default group, the number of processes, the rank among those on
/// this machine. Throw DistributedError before init().
int rank();
int world_size();
int local_rank();
/// The device init() picked.
Device device();
/// The default group (throws before init()).
ProcessGroup& default_group();
/// Waits for every rank (on the default group).
void barrier();
/// Tears down the groups and MPI (MPI_Finalize); every rank must call it.
void destroy();
/// Ends every process of the job now with exit code `code` (MPI_Abort): the way out after a
/// timeout, when other ranks may be stuck in a collective.
[[noreturn]] void abort(int code = 1);

// Collectives on the default group (see ProcessGroup).
WorkPtr all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum, bool async_op = false);
WorkPtr broadcast(Tensor& tensor, int src = 0, bool async_op = false);
WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, bool async_op = false);
WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input, bool async_op = false);
WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs,
                       ReduceOp op = ReduceOp::Sum, bool async_op = false);
WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum,
                              bool async_op = false);

}  // namespace ignis::distributed
