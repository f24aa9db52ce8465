// Joining the job and summing across ranks for `ignis train` (see data_parallel.h).
#include "data_parallel.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "options.h"

namespace ig = ignis;
namespace dist = ignis::distributed;

namespace ignis_cli {

Ranks join_job(ig::Device& device) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size == nullptr || std::atoi(size) <= 1) return {};
  if (!dist::is_available())
    throw UsageError(fmt::format(
        "started by mpirun with {} processes, but this ignis was built without MPI "
        "(IGNIS_DISTRIBUTED=OFF); rebuild with libopenmpi-dev installed, or run one process",
        size));
  dist::InitOptions init;
  // A CUDA device means "this rank's GPU" (init picks cuda:<local rank>).
  if (!device.is_cuda()) init.device = device;
  dist::init(init);
  device = dist::device();
  Ranks r{dist::rank(), dist::world_size()};
  // Only rank 0 reports progress; the others' errors still reach stderr.
  if (!r.leader() && std::freopen("/dev/null", "w", stdout) == nullptr)
    throw UsageError("rank " + std::to_string(r.rank) + ": cannot redirect its output to /dev/null");
  return r;
}

void leave_job(const Ranks& ranks) {
  if (ranks.distributed()) dist::destroy();
}

void end_job_after_error(const std::exception& e) {
  if (!dist::is_initialized() || dist::world_size() < 2) return;
  std::fflush(stdout);
  fmt::print(stderr, "ignis: error: rank {}: {}\n", dist::rank(), e.what());
  std::fflush(stderr);
  dist::abort(2);  // the CLI's exit status for errors
}

namespace {
template <typename T>
void sum_in_place(const Ranks& ranks, std::vector<T>& values) {
  if (!ranks.distributed() || values.empty()) return;
  ig::Tensor t = ig::tensor<T>(values, ig::Shape{int64_t(values.size())});
  dist::all_reduce(t, dist::ReduceOp::Sum);
  const T* p = t.data_ptr<T>();
  values.assign(p, p + values.size());
}
}  // namespace

void sum_across_ranks(const Ranks& ranks, std::vector<double>& values) {
  sum_in_place(ranks, values);
}
void sum_across_ranks(const Ranks& ranks, std::vector<int64_t>& values) {
  sum_in_place(ranks, values);
}

bool all_ranks_agree(const Ranks& ranks, bool ok) {
  std::vector<int64_t> failed{ok ? 0 : 1};
  sum_across_ranks(ranks, failed);
  return failed[0] == 0;
}

std::vector<int64_t> ShardSampler::indices(int64_t) const {
  std::vector<int64_t> mine;
  for (int64_t i = ranks_.rank; i < n_; i += ranks_.size) mine.push_back(i);
  return mine;
}

int64_t ShardSampler::size() const {
  return n_ > ranks_.rank ? (n_ - ranks_.rank + ranks_.size - 1) / ranks_.size : 0;
}

}  // namespace ignis_cli
