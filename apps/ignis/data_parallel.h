// `ignis train` under mpirun: joining the MPI job, the per-rank share of the work and the
// sums that make each rank's numbers describe the whole data set. With one process (no
// mpirun, or mpirun -np 1) every function here is the identity and nothing is initialised.
//
// How the ranks divide the work: the global --batch-size is split evenly, rank r training on
// positions r, r + R, r + 2R ... of the epoch's shuffled order (data::DistributedSampler, the
// order one process would use), so step k of all ranks together covers the samples of step k
// of a single-process run. Evaluation shards the same way but without padding (ShardSampler),
// so every sample is counted exactly once when the ranks' counts are summed.
#pragma once

#include <ignis/ignis.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace ignis_cli {

/// This process's place in the job.
struct Ranks {
  int rank = 0;
  int size = 1;
  bool distributed() const { return size > 1; }
  bool leader() const { return rank == 0; }  ///< prints and writes the run directory
};

/// Joins the MPI job when mpirun started more than one process (OMPI_COMM_WORLD_SIZE > 1) and
/// returns the ranks; otherwise returns {0, 1} without touching MPI. `device` is the one the
/// options resolved to: a CUDA device becomes cuda:<local rank>. Throws UsageError when this
/// build has no MPI. Ranks other than 0 send their standard output to /dev/null.
Ranks join_job(ignis::Device& device);

/// Leaves the job (every rank must call it); nothing with one process.
void leave_job(const Ranks& ranks);

/// Called with the error that ends this process's training: in a job of several processes,
/// prints it with the rank and ends the whole job now (distributed::abort, as torchrun's agent
/// stops the other workers), instead of leaving the others to wait in their next collective
/// until the timeout while this process's communicators are torn down by static destruction.
/// Returns (and the caller reports the error) outside such a job.
void end_job_after_error(const std::exception& e);

/// Element-wise sums over the ranks (in place; unchanged with one process).
void sum_across_ranks(const Ranks& ranks, std::vector<double>& values);
void sum_across_ranks(const Ranks& ranks, std::vector<int64_t>& values);

/// True on every rank when `ok` is true on every rank (a collective with several processes).
bool all_ranks_agree(const Ranks& ranks, bool ok);

/// Rank r's samples r, r + R, r + 2R ... < n in data set order, not padded: the ranks' shards
/// are disjoint, cover the data set, and may differ in size by one.
class ShardSampler : public ignis::data::Sampler {
 public:
  ShardSampler(int64_t n, const Ranks& ranks) : n_(n), ranks_(ranks) {}
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t size() const override;

 private:
  int64_t n_;
  Ranks ranks_;
};

}  // namespace ignis_cli
