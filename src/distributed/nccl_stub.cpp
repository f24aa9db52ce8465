// Built instead of nccl_backend.cpp when Ignis has no CUDA backend: a CUDA collective cannot
// be asked for (no CUDA tensor exists), but say clearly why if it is.
#include "distributed/backend.h"

namespace ignis::distributed::detail {

std::shared_ptr<Backend> make_nccl_backend(Backend& bootstrap, Device device,
                                           std::chrono::milliseconds) {
  fail("nccl", bootstrap.rank(), bootstrap.size(),
       fmt::format("a collective on {} needs the NCCL backend, and this build of Ignis has no "
                   "CUDA (IGNIS_CUDA=OFF or no toolkit found)",
                   device.str()));
}

}  // namespace ignis::distributed::detail
