// Grad mode: a thread-local switch read by every op before recording a graph node; anomaly
// mode: a thread-local switch read by the backward engine once per node.
#include "ignis/autograd.h"

namespace ignis {
namespace {
thread_local bool g_grad_enabled = true;
thread_local bool g_anomaly_enabled = false;
}  // namespace
bool is_grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool enabled) { g_grad_enabled = enabled; }
namespace autograd {
bool is_anomaly_enabled() { return g_anomaly_enabled; }
void set_anomaly_enabled(bool enabled) { g_anomaly_enabled = enabled; }
}  // namespace autograd
}  // namespace ignis
