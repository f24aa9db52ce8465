// The MPI backend: collectives on CPU tensors through MPI's nonblocking collectives
// (MPI_Iallreduce, MPI_Ibcast, MPI_Iallgather, MPI_Ireduce_scatter_block, MPI_Ibarrier), so
// every call returns a Work at once and wait() polls it against the group's timeout. Also MPI's
// start-up, shut-down and abort. Built only with IGNIS_DISTRIBUTED (no_mpi.cpp otherwise).
//
// Note [bf16 and f16 reductions in MPI]: MPI has no 16-bit float types, so reductions of
// bfloat16 and float16 tensors convert to float32, reduce, and round back once. The result is
// the correctly rounded float32 reduction (at least as accurate as reducing in 16 bits, as
// NCCL does); broadcast and all_gather move the 16-bit values as bytes, unchanged.
#include <mpi.h>

#include <climits>
#include <mutex>
#include <thread>

#include "distributed/backend.h"
#include "core/shape.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"

namespace ignis::distributed::detail {
namespace {

// MPI runs at MPI_THREAD_SERIALIZED: one thread in MPI at a time, whichever thread it is.
std::mutex g_mpi_mutex;
bool g_we_initialized_mpi = false;

struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string broken;  // why this communicator may no longer be used (a timeout), else ""
  ~Comm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // A communicator with a collective still pending after a timeout is left alone.
    if (!finalized && comm != MPI_COMM_NULL && broken.empty()) MPI_Comm_free(&comm);
  }
};

void check_mpi(int rc, const char* op, const Comm& c) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail(op, c.rank, c.size, fmt::format("MPI error: {}", std::string(text, size_t(len))));
}

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

// One nonblocking MPI collective. wait() polls MPI_Test until done or the deadline, measured
// from the call that started it.
class MpiWork : public Work {
 public:
  MpiWork(std::shared_ptr<Comm> comm, const char* op, std::string what,
          std::chrono::milliseconds timeout, std::vector<Tensor> keep)
      : comm_(std::move(comm)), op_(op), what_(std::move(what)), timeout_(timeout),
        start_(std::chrono::steady_clock::now()), keep_(std::move(keep)) {}
  ~MpiWork() override {
    // MPI forbids freeing a pending collective request: finish it (it keeps its buffers).
    if (!done_ && comm_->broken.empty()) {
      try {
        wait();
      } catch (const std::exception&) {
      }
    }
  }
  MPI_Request* request() { return &request_; }

  bool is_completed() override {
    if (done_) return true;
    if (!comm_->broken.empty()) return false;
    std::lock_guard lock(g_mpi_mutex);
    int flag = 0;
    check_mpi(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), op_, *comm_);
    done_ = flag != 0;
    return done_;
  }

  void wait() override {
    while (!is_completed()) {
      if (!comm_->broken.empty())
        fail(op_, comm_->rank, comm_->size,
             fmt::format("the process group is unusable: {}; call distributed::abort()",
                         comm_->broken));
      auto waited = std::chrono::steady_clock::now() - start_;
      if (waited > timeout_) {
        double s = std::chrono::duration<double>(waited).count();
        comm_->broken = fmt::format("{} timed out on rank {}", op_, comm_->rank);
        fail(op_, comm_->rank, comm_->size,
             fmt::format("timed out after {:.1f} s (timeout {:.1f} s) waiting for {}: another "
                         "rank did not call it or is stuck. The group cannot be used any more; "
                         "end the job with distributed::abort()",
                         s, std::chrono::duration<double>(timeout_).count(), what_));
      }
      // MPI's nonblocking collectives advance only inside MPI calls (MPI_Test here): a sleep
      // between polls stalls every round of the algorithm, on this rank and on its peers. So
      // poll continuously (yielding the core to other ranks) for the first 100 ms, and back
      // off only when a peer is that late, to leave the cores to the ranks still computing.
      if (waited < std::chrono::milliseconds(100))
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

 private:
  std::shared_ptr<Comm> comm_;
  const char* op_;
  std::string what_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point start_;
  std::vector<Tensor> keep_;  // the buffers MPI reads and writes until completion
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
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

  WorkPtr all_reduce(Tensor buffer, ReduceOp op) override {
    Tensor work = is_16bit_float(buffer.dtype()) ? buffer.to(kFloat32) : buffer;
    auto w = start("all_reduce", describe(buffer), {work}, [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, work.data_ptr(),
                            count_of(work.numel(), "all_reduce", *comm_), mpi_type(work.dtype()),
                            mpi_op(op, work.dtype()), comm_->comm, r);
    });
    return finish_reduction(std::move(w), buffer, work, op);
  }

  WorkPtr broadcast(Tensor buffer, int src) override {
    return start("broadcast", describe(buffer), {buffer}, [&](MPI_Request* r) {
      return MPI_Ibcast(buffer.data_ptr(), count_of(buffer.nbytes(), "broadcast", *comm_),
                        MPI_BYTE, src, comm_->comm, r);
    });
  }

  WorkPtr all_gather(Tensor output, Tensor input) override {
    return start("all_gather", describe(input), {output, input}, [&](MPI_Request* r) {
      int n = count_of(input.nbytes(), "all_gather", *comm_);
      return MPI_Iallgather(input.data_ptr(), n, MPI_BYTE, output.data_ptr(), n, MPI_BYTE,
                            comm_->comm, r);
    });
  }

  WorkPtr reduce_scatter(Tensor output, Tensor input, ReduceOp op) override {
    const bool widen = is_16bit_float(input.dtype());
    Tensor in = widen ? input.to(kFloat32) : input;
    Tensor out = widen ? empty(output.sizes(), kFloat32) : output;
    auto w = start("reduce_scatter", describe(input), {out, in}, [&](MPI_Request* r) {
      return MPI_Ireduce_scatter_block(in.data_ptr(), out.data_ptr(),
                                       count_of(out.numel(), "reduce_scatter", *comm_),
                                       mpi_type(in.dtype()), mpi_op(op, in.dtype()), comm_->comm,
                                       r);
    });
    return finish_reduction(std::move(w), output, out, op);
  }

  WorkPtr barrier() override {
    return start("barrier", "a barrier", {}, [&](MPI_Request* r) {
      return MPI_Ibarrier(comm_->comm, r);
    });
  }

  std::shared_ptr<Backend> duplicate() const override {
    auto c = std::make_shared<Comm>();
    std::lock_guard lock(g_mpi_mutex);
    check_mpi(MPI_Comm_dup(comm_->comm, &c->comm), "new_group", *comm_);
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    c->rank = comm_->rank;
    c->size = comm_->size;
    auto b = std::make_shared<MpiBackend>(c);
    b->set_timeout(timeout_);
    return b;
  }

 private:
  template <class Start>
  std::shared_ptr<MpiWork> start(const char* op, std::string what, std::vector<Tensor> keep,
                                 Start&& start_call) {
    if (!comm_->broken.empty())
      fail(op, comm_->rank, comm_->size,
           fmt::format("the process group is unusable: {}; call distributed::abort()",
                       comm_->broken));
    auto w = std::make_shared<MpiWork>(comm_, op, std::move(what), timeout_, std::move(keep));
    std::lock_guard lock(g_mpi_mutex);
    check_mpi(start_call(w->request()), op, *comm_);
    return w;
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
  std::lock_guard lock(g_mpi_mutex);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    g_we_initialized_mpi = true;
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
  std::lock_guard lock(g_mpi_mutex);
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
