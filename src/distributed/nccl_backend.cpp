// The NCCL backend: collectives on CUDA tensors, one communicator per group, bootstrapped by
// broadcasting rank 0's ncclUniqueId over the group's MPI backend. Built with the CUDA backend
// (nccl_stub.cpp otherwise).
//
// Streams: each communicator has its own stream. A collective first makes that stream wait for
// the work already queued on Ignis's compute stream (which produced the inputs), then queues
// the NCCL call and records an event. Work::is_completed() queries the event; wait() polls it
// against the group's timeout (aborting the communicator on timeout or on an asynchronous NCCL
// error, which makes the NCCL kernels return; every Work of an aborted communicator then
// fails) and then makes the compute stream wait for the event, so kernels queued after wait()
// see the result. The tensors' blocks are recorded as used on the NCCL stream, so their memory
// is not handed out again before the collective is done; a Work dropped unfinished also makes
// the stream that wrote its inputs wait, so later kernels there do not race the collective. Every
// call that switches to the communicator's device switches back. NCCL reduces bf16 and f16 natively
// (no float32 round trip) and has a native average (ncclAvg).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <thread>

#include "core/graph_capture.h"
#include "core/tensor_impl.h"
#include "cuda/context.h"
#include "distributed/backend.h"
#include "ignis/cuda.h"
#include "ignis/ops.h"

namespace ignis::distributed::detail {
namespace {

/// Ignis's compute stream on `device`, where its kernels run (include/ignis/cuda.h).
cudaStream_t compute_stream(int device) {
  return static_cast<cudaStream_t>(ignis::cuda::current_stream(device).handle());
}

struct NcclComm {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  int rank = 0;
  int size = 1;
  int* scratch = nullptr;  // one int on the device for barrier()
  std::string broken;      // why the communicator may no longer be used, else ""
  /// Marks the communicator unusable and aborts it: NCCL's rule after a timeout or an
  /// asynchronous error (its queued kernels return; nothing about them can be assumed), and
  /// the teardown then does not wait for them.
  void abort(std::string why) {
    if (broken.empty()) broken = std::move(why);
    if (comm) ncclCommAbort(comm);
    comm = nullptr;
  }
  ~NcclComm() {
    int previous = -1;
    cudaGetDevice(&previous);  // errors at teardown cannot be reported
    cudaSetDevice(device);
    if (comm) broken.empty() ? ncclCommDestroy(comm) : ncclCommAbort(comm);
    if (scratch) cudaFree(scratch);
    if (stream) cudaStreamDestroy(stream);
    if (previous >= 0) cudaSetDevice(previous);
  }
};

std::string nccl_error_text(ncclResult_t rc, const NcclComm& c) {
  return fmt::format("NCCL error on cuda:{}: {} ({})", c.device, ncclGetErrorString(rc),
                     c.comm ? ncclGetLastError(c.comm) : "");
}
void check_nccl(ncclResult_t rc, const char* op, const NcclComm& c) {
  if (rc == ncclSuccess) return;
  fail(op, c.rank, c.size, nccl_error_text(rc, c));
}
/// An NCCL error after which the ranks may be out of step: aborts the communicator (NCCL's
/// rule: its queued kernels return, and it takes no further collective) and fails op.
[[noreturn]] void abort_and_fail(NcclComm& c, const char* op, ncclResult_t rc) {
  const std::string what = nccl_error_text(rc, c);
  c.abort(fmt::format("{} failed on rank {}: {}", op, c.rank, what));
  fail(op, c.rank, c.size, what + "; the communicator was aborted");
}
/// A communicator aborted by a timeout or an error takes no collective and hands out no result.
void check_usable(const char* op, const NcclComm& c) {
  if (!c.broken.empty())
    fail(op, c.rank, c.size, fmt::format("the NCCL communicator is unusable: {}", c.broken));
}
void check_cuda(cudaError_t rc, const char* op, const NcclComm& c) {
  if (rc == cudaSuccess) return;
  fail(op, c.rank, c.size,
       fmt::format("CUDA error on cuda:{}: {}", c.device, cudaGetErrorString(rc)));
}

/// Makes the communicator's device current for a scope; the caller's device afterwards.
class OnDevice {
 public:
  OnDevice(int device, const char* op, const NcclComm& c) {
    check_cuda(cudaGetDevice(&previous_), op, c);
    check_cuda(cudaSetDevice(device), op, c);
  }
  ~OnDevice() { cudaSetDevice(previous_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = 0;
};

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Float16: return ncclFloat16;
    case DType::Int64: return ncclInt64;
    case DType::Int32: return ncclInt32;
    case DType::UInt8:
    case DType::Bool: return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op, DType d) {
  // bool as bytes 0/1: max is logical or, min logical and (a sum could wrap past 255).
  if (d == DType::Bool) return op == ReduceOp::Min ? ncclMin : ncclMax;
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
  }
  return ncclSum;
}

class NcclWork : public Work {
 public:
  NcclWork(
      std::shared_ptr<NcclComm> comm,
      const char* op,
      std::chrono::milliseconds timeout,
      std::vector<Tensor> keep,
      cudaStream_t producer)
      : comm_(std::move(comm)),
        op_(op),
        timeout_(timeout),
        start_(std::chrono::steady_clock::now()),
        keep_(std::move(keep)),
        producer_(producer) {
    check_cuda(cudaEventCreateWithFlags(&done_event_, cudaEventDisableTiming), op_, *comm_);
  }
  ~NcclWork() override {
    // Dropped before it was seen complete: later work on the stream the kept tensors came
    // from (which reuses their memory once they are freed) waits for the collective. That
    // stream, not this thread's current one: the Work may be dropped elsewhere.
    if (!done_)
      cudaStreamWaitEvent(producer_, done_event_, 0);  // errors at teardown: none to report
    cudaEventDestroy(done_event_);
  }
  cudaEvent_t event() const { return done_event_; }

  bool is_completed() override {
    if (done_) return true;
    // Aborted (by another Work's timeout or error): the event may pass with the collective cut
    // short, so its result is not one to hand out.
    check_usable(op_, *comm_);
    cudaError_t rc = cudaEventQuery(done_event_);
    if (rc == cudaErrorNotReady) {
      (void)cudaGetLastError();  // kept as the last error too; a later launch check would see it
      check_async_error();
      return false;
    }
    check_cuda(rc, op_, *comm_);
    // An asynchronous error makes NCCL's kernels return early, so a passed event alone does
    // not say the result is whole.
    check_async_error();
    // Later kernels on Ignis's compute stream must see the result.
    check_cuda(cudaStreamWaitEvent(compute_stream(comm_->device), done_event_, 0), op_, *comm_);
    done_ = true;
    return true;
  }

  /// An asynchronous NCCL error aborts the communicator and fails this Work.
  void check_async_error() {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_->comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) abort_and_fail(*comm_, op_, async);
  }

  void wait() override {
    for (int polls = 0; !is_completed(); ++polls) {
      auto waited = std::chrono::steady_clock::now() - start_;
      if (waited > timeout_) {
        comm_->abort(fmt::format("{} timed out on rank {}", op_, comm_->rank));
        fail(op_, comm_->rank, comm_->size,
             fmt::format("timed out after {:.1f} s on cuda:{}: another rank did not call it or "
                         "is stuck; the communicator was aborted. End the job with "
                         "distributed::abort()",
                         std::chrono::duration<double>(waited).count(), comm_->device));
      }
      if (polls < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

 private:
  std::shared_ptr<NcclComm> comm_;
  const char* op_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Tensor> keep_;
  cudaStream_t producer_;  ///< the stream that wrote the inputs (its pool holds keep_'s memory)
  cudaEvent_t done_event_ = nullptr;
  bool done_ = false;
};

class NcclBackend : public Backend {
 public:
  explicit NcclBackend(std::shared_ptr<NcclComm> comm) : comm_(std::move(comm)) {}
  const char* name() const override { return "nccl"; }
  int rank() const override { return comm_->rank; }
  int size() const override { return comm_->size; }

  WorkPtr all_reduce(Tensor b, ReduceOp op) override {
    return run("all_reduce", {b}, [&] {
      return ncclAllReduce(b.data_ptr(), b.data_ptr(), size_t(b.numel()), nccl_type(b.dtype()),
                           nccl_op(op, b.dtype()), comm_->comm, comm_->stream);
    });
  }
  WorkPtr broadcast(Tensor b, int src) override {
    return run("broadcast", {b}, [&] {
      return ncclBroadcast(b.data_ptr(), b.data_ptr(), size_t(b.numel()), nccl_type(b.dtype()),
                           src, comm_->comm, comm_->stream);
    });
  }
  WorkPtr all_gather(Tensor out, Tensor in) override {
    return run("all_gather", {out, in}, [&] {
      return ncclAllGather(in.data_ptr(), out.data_ptr(), size_t(in.numel()),
                           nccl_type(in.dtype()), comm_->comm, comm_->stream);
    });
  }
  WorkPtr reduce_scatter(Tensor out, Tensor in, ReduceOp op) override {
    return run("reduce_scatter", {out, in}, [&] {
      return ncclReduceScatter(in.data_ptr(), out.data_ptr(), size_t(out.numel()),
                               nccl_type(in.dtype()), nccl_op(op, in.dtype()), comm_->comm,
                               comm_->stream);
    });
  }
  WorkPtr barrier() override {
    return run("barrier", {}, [&] {
      return ncclAllReduce(comm_->scratch, comm_->scratch, 1, ncclInt32, ncclSum, comm_->comm,
                           comm_->stream);
    });
  }
  std::shared_ptr<Backend> duplicate() const override {
    auto c = std::make_shared<NcclComm>();
    c->device = comm_->device;
    c->rank = comm_->rank;
    c->size = comm_->size;
    OnDevice on(c->device, "new_group", *comm_);
    check_nccl(ncclCommSplit(comm_->comm, 0, comm_->rank, &c->comm, nullptr), "new_group",
               *comm_);
    finish_setup(*c);
    auto b = std::make_shared<NcclBackend>(c);
    b->set_timeout(timeout_);
    return b;
  }

  static void finish_setup(NcclComm& c) {
    check_cuda(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), "init", c);
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&c.scratch), sizeof(int)), "init", c);
  }

 private:
  template <class Call>
  WorkPtr run(const char* op, std::vector<Tensor> keep, Call&& call) {
    // A capture would take in the NCCL stream, and wait() would then query an event recorded
    // inside it, which CUDA refuses.
    ignis::detail::refuse_during_capture(op, "runs an NCCL collective");
    check_usable(op, *comm_);
    for (const Tensor& t : keep)
      if (t.device().index != comm_->device)
        fail(op, comm_->rank, comm_->size,
             fmt::format("a tensor on {} given to the communicator of cuda:{}", t.device().str(),
                         comm_->device));
    OnDevice on(comm_->device, op, *comm_);
    // The NCCL stream uses the tensors' memory: once freed, the caching allocator hands it out
    // again only after the collective (whichever stream the tensor was allocated on).
    for (const Tensor& t : keep)
      if (t.numel() > 0)
        ignis::cuda::detail::record_storage_stream(
            t.impl()->storage->data, t.device(), false, comm_->stream);
    const cudaStream_t producer = compute_stream(comm_->device);
    auto w = std::make_shared<NcclWork>(comm_, op, timeout_, std::move(keep), producer);
    // The inputs were written by kernels on Ignis's compute stream (not the legacy default
    // stream, which it does not synchronise with): order after them.
    check_cuda(cudaEventRecord(w->event(), producer), op, *comm_);
    check_cuda(cudaStreamWaitEvent(comm_->stream, w->event(), 0), op, *comm_);
    const ncclResult_t rc = call();
    // A failure other than this call's own arguments (a lost connection, an internal error)
    // leaves the ranks out of step: the communicator takes no further collective.
    if (rc != ncclSuccess && rc != ncclInvalidArgument && rc != ncclInvalidUsage)
      abort_and_fail(*comm_, op, rc);
    check_nccl(rc, op, *comm_);
    check_cuda(cudaEventRecord(w->event(), comm_->stream), op, *comm_);
    return w;
  }

  std::shared_ptr<NcclComm> comm_;
};

}  // namespace

std::shared_ptr<Backend> make_nccl_backend(Backend& bootstrap, Device device,
                                           std::chrono::milliseconds timeout) {
  auto c = std::make_shared<NcclComm>();
  c->device = device.index;
  c->rank = bootstrap.rank();
  c->size = bootstrap.size();
  OnDevice on(c->device, "nccl init", *c);
  // Rank 0 makes the id; the MPI group carries it to the others.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (c->rank == 0) check_nccl(ncclGetUniqueId(&id), "nccl init", *c);
  Tensor bytes = empty({int64_t(sizeof(id))}, kUInt8);
  std::memcpy(bytes.data_ptr(), &id, sizeof(id));
  bootstrap.broadcast(bytes, 0)->wait();
  std::memcpy(&id, bytes.data_ptr(), sizeof(id));
  check_nccl(ncclCommInitRank(&c->comm, c->size, id, c->rank), "nccl init", *c);
  NcclBackend::finish_setup(*c);
  auto b = std::make_shared<NcclBackend>(c);
  b->set_timeout(timeout);
  return b;
}

}  // namespace ignis::distributed::detail
