// main() of the tests that run under mpirun: every rank runs every test (collectives need all
// of them), rank 0 prints gtest's usual report and the other ranks print only their failures,
// prefixed with the rank. A short group timeout turns a test that leaves ranks out of step
// into an error naming the collective instead of a hang.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "ignis/cuda.h"
#include "ignis/distributed.h"
#include "ignis/ops.h"

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  namespace dist = ignis::distributed;
  // One GPU per rank when there are enough (the NCCL suite), else every rank on the CPU.
  std::optional<ignis::Device> device;
  const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local_size || ignis::cuda::device_count() < std::atoi(local_size))
    device = ignis::Device::cpu();
  dist::init({.timeout = std::chrono::seconds(60), .device = device});
  ignis::set_num_threads(1);  // ranks share the cores
  if (dist::rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(dist::rank()));
  }
  int rc = RUN_ALL_TESTS();
  dist::destroy();
  return rc;
}
