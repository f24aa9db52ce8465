// The MPI backend: collectives on CPU tensors. Each communicator has one worker thread that
// runs its blocking MPI collectives (MPI_Allreduce, MPI_Bcast, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Barrier) in call order, as PyTorch's ProcessGroupMPI does; a
// call returns a Work at once, and wait() waits for the worker with the group's timeout. Also
// MPI's start-up, shut-down and abort. Built only with IGNIS_DISTRIBUTED (no_mpi.cpp otherwise).
//
// Note [MPI worker threads]: MPI's nonblocking collectives (MPI_Iallreduce ...) would avoid the
// thread, but Open MPI advances them only inside MPI calls, so every round of the algorithm
// waits for the next poll, and they use slower algorithms than the blocking ones: measured on
// 2 ranks (docs/performance.md), 1 MiB took 0.6-9 ms through MPI_Iallreduce against 0.11-0.12
// ms through MPI_Allreduce, 100 MiB 0.67-0.81 s against 0.32 s. The worker thread runs the
// blocking call as fast as MPI_Allreduce does and progresses it while the caller computes (the overlap
// DDP wants), and when a collective never completes only the worker is stuck: the caller gets
// the timeout error. Worker threads of several groups call MPI at once: MPI_THREAD_MULTIPLE.
//
// Note [bf16 and f16 reductions in MPI]: MPI has no 16-bit float types, so reductions of
// bfloat16 and float16 tensors convert to float32, reduce, and round back once. The result is
// the correctly rounded float32 reduction (at least as accurate as reducing in 16 bits, as
// NCCL does); broadcast and all_gather move the 16-bit values as bytes, unchanged.
#include <mpi.h>

#include <climits>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "distributed/backend.h"
#include "core/shape.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"

namespace ignis::distributed::detail {
namespace {

bool g_we_initialized_mpi = false;

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, size_t(len));
}

// Runs jobs one after another on its own thread (Note [MPI worker threads]).
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {}
  ~Worker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enqueue(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stop_ and nothing left to run
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string broken;  // why this communicator may no longer be used (a timeout), else ""
  std::unique_ptr<Worker> worker = std::make_unique<Worker>();
  ~Comm() {
    if (!broken.empty()) {
      // The worker is stuck in a collective that will never complete: leave it (and the
      // communicator) alone; the job must end with distributed::abort().
      (void)worker.release();
      return;
    }
    worker.reset();  // runs what is queued, then joins
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

// What the worker reports back to the Work.
struct Completion {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  int rc = MPI_SUCCESS;
};

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int64: return MPI_INT64_T;
    case DType::Int32: return MPI_INT32_T;
    case DType::UInt8: return MPI_UINT8_T;
    case DType::Bool: return MPI_C_BOOL;
    case DType::BFloat16:  // reduced through float32, see Note [bf16 and f16 reductions in MPI]
    case DType::Float16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op, DType d) {
  if (d == DType::Bool) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return MPI_SUM;  // Avg divides afterwards
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Min: return MPI_MIN;
  }
  return MPI_SUM;
}

int count_of(int64_t n, const char* op, const Comm& c) {
  if (n > INT_MAX)
    fail(op, c.rank, c.size,
         fmt::format("{} elements exceed MPI's int count limit; split the tensor", n));
  return int(n);
}

// One collective queued on the communicator's worker. wait() blocks until the worker has run
// it or the deadline (measured from the call that queued it) passes.
class MpiWork : public Work {
 public:
  MpiWork(std::shared_ptr<Comm> comm, std::shared_ptr<Completion> completion, const char* op,
          std::string what, std::chrono::milliseconds timeout)
      : comm_(std::move(comm)), completion_(std::move(completion)), op_(op),
        what_(std::move(what)), timeout_(timeout), start_(std::chrono::steady_clock::now()) {}

  bool is_completed() override {
    std::lock_guard lock(completion_->mutex);
    if (completion_->done) check();
    return completion_->done;
  }

  void wait() override {
    std::unique_lock lock(completion_->mutex);
    if (!completion_->cv.wait_until(lock, start_ + timeout_, [&] { return completion_->done; })) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      comm_->broken = fmt::format("{} timed out on rank {}", op_, comm_->rank);
      fail(op_, comm_->rank, comm_->size,
           fmt::format("timed out after {:.1f} s (timeout {:.1f} s) waiting for {}: another "
                       "rank did not call it or is stuck. The group cannot be used any more; "
                       "end the job with distributed::abort()",
                       s, std::chrono::duration<double>(timeout_).count(), what_));
    }
    check();
  }

 private:
  void check() const {
    if (completion_->rc != MPI_SUCCESS)
      fail(op_, comm_->rank, comm_->size,
           fmt::format("MPI error on {}: {}", what_, mpi_error_text(completion_->rc)));
  }
  std::shared_ptr<Comm> comm_;
  std::shared_ptr<Completion> completion_;
  const char* op_;
  std::string what_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point start_;
};

std::string describe(const Tensor& t) {
  return fmt::format("a {} tensor of shape {}", dtype_name(t.dtype()), ignis::detail::shape_str(t.sizes()));
}

bool is_16bit_float(DType d) { return d == DType::BFloat16 || d == DType::Float16; }

class MpiBackend : public Backend {
 public:
  explicit MpiBackend(std::shared_ptr<Comm> comm) : comm_(std::move(comm)) {}
  const char* name() const override { return "mpi"; }
  int rank() const override { return comm_->rank; }
  int size() const override { return comm_->size; }

  // Each job captures its tensors by value: they stay alive until the worker has run it.
  WorkPtr all_reduce(Tensor buffer, ReduceOp op) override {
    Tensor work = is_16bit_float(buffer.dtype()) ? buffer.to(kFloat32) : buffer;
    int n = count_of(work.numel(), "all_reduce", *comm_);
    MPI_Datatype type = mpi_type(work.dtype());
    MPI_Op mop = mpi_op(op, work.dtype());
    auto w = start("all_reduce", describe(buffer), [work, n, type, mop](MPI_Comm c) {
      return MPI_Allreduce(MPI_IN_PLACE, work.data_ptr(), n, type, mop, c);
    });
    return finish_reduction(std::move(w), buffer, work, op);
  }

  WorkPtr broadcast(Tensor buffer, int src) override {
    int n = count_of(buffer.nbytes(), "broadcast", *comm_);
    return start("broadcast", describe(buffer), [buffer, n, src](MPI_Comm c) {
      return MPI_Bcast(buffer.data_ptr(), n, MPI_BYTE, src, c);
    });
  }

  WorkPtr all_gather(Tensor output, Tensor input) override {
    int n = count_of(input.nbytes(), "all_gather", *comm_);
    return start("all_gather", describe(input), [output, input, n](MPI_Comm c) {
      return MPI_Allgather(input.data_ptr(), n, MPI_BYTE, output.data_ptr(), n, MPI_BYTE, c);
    });
  }

  WorkPtr reduce_scatter(Tensor output, Tensor input, ReduceOp op) override {
    const bool widen = is_16bit_float(input.dtype());
    Tensor in = widen ? input.to(kFloat32) : input;
    Tensor out = widen ? empty(output.sizes(), kFloat32) : output;
    int n = count_of(out.numel(), "reduce_scatter", *comm_);
    MPI_Datatype type = mpi_type(in.dtype());
    MPI_Op mop = mpi_op(op, in.dtype());
    auto w = start("reduce_scatter", describe(input), [in, out, n, type, mop](MPI_Comm c) {
      return MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), n, type, mop, c);
    });
    return finish_reduction(std::move(w), output, out, op);
  }

  WorkPtr barrier() override {
    return start("barrier", "a barrier", [](MPI_Comm c) { return MPI_Barrier(c); });
  }

  std::shared_ptr<Backend> duplicate() const override {
    // MPI_Comm_dup is collective: it runs on the worker, in order with the collectives.
    auto c = std::make_shared<Comm>();
    c->rank = comm_->rank;
    c->size = comm_->size;
    auto self = const_cast<MpiBackend*>(this);
    self->start("new_group", "a new group (MPI_Comm_dup)", [c](MPI_Comm parent) {
          int rc = MPI_Comm_dup(parent, &c->comm);
          if (rc == MPI_SUCCESS) MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
          return rc;
        })->wait();
    auto b = std::make_shared<MpiBackend>(c);
    b->set_timeout(timeout_);
    return b;
  }

 private:
  std::shared_ptr<MpiWork> start(const char* op, std::string what,
                                 std::function<int(MPI_Comm)> call) {
    if (!comm_->broken.empty())
      fail(op, comm_->rank, comm_->size,
           fmt::format("the process group is unusable: {}; call distributed::abort()",
                       comm_->broken));
    auto done = std::make_shared<Completion>();
    comm_->worker->enqueue([done, call = std::move(call), comm = comm_->comm] {
      int rc = call(comm);
      {
        std::lock_guard lock(done->mutex);
        done->done = true;
        done->rc = rc;
      }
      done->cv.notify_all();
    });
    return std::make_shared<MpiWork>(comm_, done, op, std::move(what), timeout_);
  }

  // Avg divides by the group size; a float32 round trip is rounded back into `result`.
  WorkPtr finish_reduction(WorkPtr w, Tensor result, Tensor reduced, ReduceOp op) {
    const bool avg = op == ReduceOp::Avg;
    const bool copy_back = result.impl() != reduced.impl();
    if (!avg && !copy_back) return w;
    const int n = comm_->size;
    return then(std::move(w), [result, reduced, avg, copy_back, n]() mutable {
      NoGradGuard no_grad;
      if (avg) reduced.div_(n);
      if (copy_back) result.copy_(reduced);
    });
  }

  std::shared_ptr<Comm> comm_;
};

}  // namespace

MpiWorld mpi_init(std::chrono::milliseconds timeout) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    g_we_initialized_mpi = true;
    if (provided < MPI_THREAD_MULTIPLE)
      throw DistributedError(
          "[init] this MPI library does not provide MPI_THREAD_MULTIPLE, which the worker "
          "threads of Ignis's process groups need (Note [MPI worker threads])");
  }
  auto c = std::make_shared<Comm>();
  MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  // Errors come back as return codes and become DistributedError, instead of MPI aborting.
  MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->comm, &c->rank);
  MPI_Comm_size(c->comm, &c->size);
  // The rank among the processes sharing this machine's memory, whatever the launcher.
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node);
  MpiWorld world;
  MPI_Comm_rank(node, &world.local_rank);
  MPI_Comm_free(&node);
  auto backend = std::make_shared<MpiBackend>(c);
  backend->set_timeout(timeout);
  world.backend = backend;
  return world;
}

void mpi_finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialized_mpi && !finalized) MPI_Finalize();
}

void mpi_abort(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace ignis::distributed::detail

namespace ignis::distributed {
bool is_available() { return true; }
}  // namespace ignis::distributed
