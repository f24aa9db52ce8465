// Built instead of mpi_backend.cpp when Ignis is configured without MPI (IGNIS_DISTRIBUTED
// OFF): init() says so instead of failing later in a collective.
#include <cstdlib>

#include "distributed/backend.h"

namespace ignis::distributed {
bool is_available() { return false; }
}  // namespace ignis::distributed

namespace ignis::distributed::detail {

MpiWorld mpi_init(std::chrono::milliseconds) {
  throw DistributedError(
      "[init] Ignis was built without MPI (IGNIS_DISTRIBUTED=OFF): install Open MPI "
      "(libopenmpi-dev, openmpi-bin; scripts/setup.sh does) and reconfigure");
}
void mpi_finalize() {}
void mpi_abort(int code) { std::exit(code); }

}  // namespace ignis::distributed::detail
