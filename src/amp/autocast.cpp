// The per-thread autocast state behind amp::autocast and the casts the op front ends apply
// (src/amp/autocast_policy.h).
#include <fmt/format.h>

#include "amp/autocast_policy.h"
#include "core/error.h"
#include "ignis/amp.h"

namespace ignis {

namespace {
struct AutocastState {
  bool enabled = false;
  bool applied = false;  // inside an op that has already cast (Note [Autocast applies once])
  DType dtype = kBFloat16;
};
thread_local AutocastState state;

bool is_low_or_single(DType t) { return t == kFloat32 || t == kBFloat16 || t == kFloat16; }
}  // namespace

namespace amp {

bool is_autocast_enabled() { return state.enabled; }
DType autocast_dtype() { return state.dtype; }

autocast::autocast(DType dtype, bool enabled)
    : prev_enabled_(state.enabled), prev_dtype_(state.dtype) {
  IGNIS_CHECK(
      dtype == kBFloat16 || dtype == kFloat16,
      DTypeError,
      "[autocast] the low-precision dtype must be bfloat16 or float16, got {}",
      dtype_name(dtype));
  state.enabled = enabled;
  if (enabled) state.dtype = dtype;
}

autocast::~autocast() {
  state.enabled = prev_enabled_;
  state.dtype = prev_dtype_;
}

}  // namespace amp

namespace detail {

bool autocast_pending() { return state.enabled && !state.applied; }

AutocastApplied::AutocastApplied() : prev_(state.applied) { state.applied = true; }
AutocastApplied::~AutocastApplied() { state.applied = prev_; }

Tensor autocast_low(const Tensor& t) {
  if (!t.defined() || !is_low_or_single(t.dtype())) return t;
  return t.to(state.dtype);
}

Tensor autocast_fp32(const Tensor& t) {
  if (!t.defined() || (t.dtype() != kBFloat16 && t.dtype() != kFloat16)) return t;
  return t.to(kFloat32);
}

}  // namespace detail
}  // namespace ignis
