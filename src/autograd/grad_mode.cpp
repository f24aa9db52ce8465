// Grad mode: a thread-local switch read by every op before recording a graph node.
#include "ignis/autograd.h"

namespace ignis {
namespace {
thread_local bool g_grad_enabled = true;
}
bool is_grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool enabled) { g_grad_enabled = enabled; }
}  // namespace ignis
