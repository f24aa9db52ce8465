// Note [OpenMP waiting on a shared machine]
// GNU's OpenMP runtime (libgomp, which GCC builds and Debian's oneDNN use) makes a thread that
// waits at a barrier spin GOMP_SPINCOUNT times before it sleeps: 300,000 by default, a few
// milliseconds. On a quiet machine the spin saves a wake-up per parallel region. On a machine
// whose cores other processes share, a thread that has finished its part spends its time slice
// spinning while its partner waits in the run queue, and each parallel region costs a time
// slice. With four busy processes beside it on two cores, the small CNN's training step at two
// threads took 288–350 ms, against 131 ms at one thread; with 3,000 spins (tens of
// microseconds) it took 109–111 ms, and one epoch of `ignis train --limit 20000` took 16–18 s
// against 44–47 s. On the quiet machine the step took 24.5–29.5 ms against 23.7–27.1 with the
// default, and the whole default run (`ignis train`, 8 epochs) 90.4–93.8 s against 88.2–89.9:
// 2–5% slower, the price of a wake-up per region. Passive waiting (no spin) cost 15–25%.
//
// libgomp reads its variables once, when it is loaded, before main(); so `ignis` sets
// GOMP_SPINCOUNT and executes itself again: same process id, arguments and open files. A
// GOMP_SPINCOUNT or OMP_WAIT_POLICY of the user's own is kept as it is. Programs that link
// libignis themselves choose for themselves (docs/architecture.md, "Threads").
#include "openmp_wait.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

namespace ignis_cli {
namespace {

// libgomp's soname; LLVM's libomp (the sanitizer builds) ignores GOMP_SPINCOUNT.
bool gnu_openmp_loaded() {
  void* handle = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

}  // namespace

void limit_openmp_spinning(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (!gnu_openmp_loaded()) return;
  if (setenv("GOMP_SPINCOUNT", kSpinCount, 0) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc, or the executable is gone: run with the runtime's default, environment unchanged.
  unsetenv("GOMP_SPINCOUNT");
}

std::string openmp_wait_text() {
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (spin == nullptr && policy == nullptr) return "the OpenMP runtime's default";
  std::string text;
  if (policy != nullptr) text = fmt::format("OMP_WAIT_POLICY={}", policy);
  if (spin != nullptr) text += fmt::format("{}GOMP_SPINCOUNT={}", text.empty() ? "" : ", ", spin);
  return text;
}

}  // namespace ignis_cli
