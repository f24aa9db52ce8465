// The timeout of a collective, run under mpirun by CTest: the last rank skips an all_reduce;
// every other rank must get a DistributedError naming all_reduce and itself after the timeout
// (2 s) and well before twice it, instead of hanging. The ranks then compare notes on a second
// group (its collectives never mix with the stuck one), rank 0 prints the verdict and ends the
// job with distributed::abort(): the stuck all_reduce can never finish. CTest passes the test
// on the verdict line "timeout test passed" (PASS_REGULAR_EXPRESSION), whatever exit code
// mpirun reports for the abort.
#include <chrono>
#include <cstdio>
#include <string>

#include "ignis/distributed.h"
#include "ignis/ops.h"

namespace dist = ignis::distributed;

int main() {
  dist::init({.timeout = std::chrono::seconds(2)});
  const int me = dist::rank(), n = dist::world_size();
  auto notes = dist::default_group().duplicate();  // made before anything can time out
  notes->set_timeout(std::chrono::seconds(60));
  int ok = 0;
  if (me == n - 1) {
    ok = 1;  // skips the collective
  } else {
    ignis::Tensor t = ignis::ones({8});
    auto start = std::chrono::steady_clock::now();
    try {
      dist::all_reduce(t);
      std::printf("rank %d: all_reduce returned without the last rank\n", me);
    } catch (const dist::DistributedError& e) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::string m = e.what();
      std::string who = "[all_reduce] rank " + std::to_string(me) + " of " + std::to_string(n);
      ok = m.find(who) != std::string::npos && m.find("timed out") != std::string::npos &&
           s >= 2.0 && s < 4.0;
      std::printf("rank %d: error after %.2f s: %s\n", me, s, m.c_str());
      // The group refuses further use, naming why.
      try {
        dist::barrier();
        ok = 0;
      } catch (const dist::DistributedError& e2) {
        ok = ok && std::string(e2.what()).find("unusable") != std::string::npos;
      }
    }
  }
  ignis::Tensor all_ok = ignis::full({1}, double(ok), ignis::kInt32);
  notes->all_reduce(all_ok, dist::ReduceOp::Min);
  if (me == 0) {
    std::printf(all_ok.item<int>() ? "timeout test passed on %d ranks\n"
                                   : "timeout test FAILED on %d ranks\n",
                n);
    std::fflush(stdout);
    dist::abort(all_ok.item<int>() ? 0 : 1);
  }
  // Ranks other than 0 wait here until rank 0's abort ends the job.
  notes->barrier();
  return 0;
}
