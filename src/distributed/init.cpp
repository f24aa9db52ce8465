// distributed::init() and the process-wide state it sets up: the launcher's environment, this
// process's device, the default group; and the free functions that use the default group.
#include <cstdlib>
#include <string>

#include "distributed/backend.h"
#include "ignis/cuda.h"

namespace ignis::distributed {
namespace {

struct State {
  bool initialized = false;
  int local_rank = 0;
  Device device;
  std::shared_ptr<ProcessGroup> group;
};
State g_state;

std::optional<long> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0)
    throw DistributedError(
        fmt::format("[init] environment variable {}='{}' is not a whole number", name, v));
  return x;
}

// The launcher's variables must describe the MPI job we are in; a disagreement means two
// launchers were mixed (or torchrun started separate single-process MPI jobs).
void check_environment(int rank, int size, int local_rank) {
  auto expect = [&](const char* name, long actual) {
    auto v = env_int(name);
    if (v && *v != actual)
      throw DistributedError(fmt::format(
          "[init] rank {} of {}: {}={} but MPI says {}; launch with mpirun, which sets both",
          rank, size, name, *v, actual));
  };
  auto ws = env_int("WORLD_SIZE");
  if (ws && *ws > 1 && size == 1)
    throw DistributedError(fmt::format(
        "[init] WORLD_SIZE={} (a torchrun-style launch, MASTER_ADDR/MASTER_PORT) but this "
        "process is alone in its MPI job: Ignis's process groups start through MPI; launch "
        "with `mpirun -np {} ...` instead",
        *ws, *ws));
  expect("OMPI_COMM_WORLD_RANK", rank);
  expect("OMPI_COMM_WORLD_SIZE", size);
  expect("OMPI_COMM_WORLD_LOCAL_RANK", local_rank);
  expect("RANK", rank);
  expect("WORLD_SIZE", size);
  expect("LOCAL_RANK", local_rank);
}

Device pick_device(const InitOptions& options, int rank, int size, int local_rank) {
  if (options.device) return *options.device;
  int gpus = cuda::device_count();
  if (gpus == 0) return Device::cpu();
  if (local_rank >= gpus)
    throw DistributedError(fmt::format(
        "[init] rank {} of {}: local rank {} but this machine has {} GPU(s); NCCL needs one GPU "
        "per process: start at most {} processes per machine, or set InitOptions::device",
        rank, size, local_rank, gpus, gpus));
  return Device::cuda(local_rank);
}

void require_init(const char* what) {
  if (!g_state.initialized)
    throw DistributedError(
        fmt::format("[{}] distributed::init() has not been called in this process", what));
}

}  // namespace

void init(InitOptions options) {
  if (g_state.initialized)
    throw DistributedError("[init] already initialised (call destroy() first)");
  detail::MpiWorld world = detail::mpi_init(options.timeout);
  const int rank = world.backend->rank(), size = world.backend->size();
  check_environment(rank, size, world.local_rank);
  g_state.device = pick_device(options, rank, size, world.local_rank);
  // The rank's GPU becomes current, so that CUDA work not given a device (a library's, raw
  // CUDA in the program) lands on it rather than on GPU 0.
  if (g_state.device.is_cuda()) cuda::set_device(g_state.device.index);
  g_state.local_rank = world.local_rank;
  g_state.group = std::make_shared<ProcessGroup>(world.backend);
  g_state.initialized = true;
}

bool is_initialized() { return g_state.initialized; }

int rank() {
  require_init("rank");
  return g_state.group->rank();
}
int world_size() {
  require_init("world_size");
  return g_state.group->size();
}
int local_rank() {
  require_init("local_rank");
  return g_state.local_rank;
}
Device device() {
  require_init("device");
  return g_state.device;
}
ProcessGroup& default_group() {
  require_init("default_group");
  return *g_state.group;
}

void barrier() { default_group().barrier(); }

void destroy() {
  require_init("destroy");
  g_state.group.reset();
  g_state.initialized = false;
  detail::mpi_finalize();
}

void abort(int code) { detail::mpi_abort(code); }

WorkPtr all_reduce(Tensor& tensor, ReduceOp op, bool async_op) {
  return default_group().all_reduce(tensor, op, async_op);
}
WorkPtr broadcast(Tensor& tensor, int src, bool async_op) {
  return default_group().broadcast(tensor, src, async_op);
}
WorkPtr all_gather(std::vector<Tensor>& outputs, const Tensor& input, bool async_op) {
  return default_group().all_gather(outputs, input, async_op);
}
WorkPtr all_gather_into_tensor(Tensor& output, const Tensor& input, bool async_op) {
  return default_group().all_gather_into_tensor(output, input, async_op);
}
WorkPtr reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs, ReduceOp op,
                       bool async_op) {
  return default_group().reduce_scatter(output, inputs, op, async_op);
}
WorkPtr reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op, bool async_op) {
  return default_group().reduce_scatter_tensor(output, input, op, async_op);
}

}  // namespace ignis::distributed
