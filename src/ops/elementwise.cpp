// Elementwise ops: type promotion, broadcasting and the front end of every unary, binary and
// ternary function in ops.h. The math lives in src/kernels/{unary,binary}_ops.h; this file
// only decides dtypes and shapes and calls one kernel per op.
#include "ops/elementwise.h"

#include <limits>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "core/dispatch.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/elementwise_grad.h"
#include "ops/write_checks.h"

namespace ignis {

using namespace detail;
using kernels::BinaryOp;
using kernels::BinaryParams;
using kernels::OpKind;
using kernels::UnaryOp;
using kernels::UnaryParams;

// ---------------------------------------------------------------------------------------------
// Type promotion (PyTorch's result_type): dimensioned tensors outrank 0-dim tensors, which
// outrank plain scalars, unless a lower-ranked operand is of a higher category
// (bool < integer < floating). A floating scalar then contributes the default dtype (float32),
// an integer scalar int64.
namespace detail {
namespace {
int category(DType t) { return t == kBool ? 0 : is_floating(t) ? 2 : 1; }

struct ResultState {
  std::optional<DType> dim, zero, wrapped;
};
void update(std::optional<DType>& slot, DType t) { slot = slot ? promote_types(*slot, t) : t; }

std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == kBool || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}
}  // namespace

DType result_type(std::initializer_list<ElementwiseOperand> operands) {
  ResultState s;
  for (const ElementwiseOperand& o : operands) {
    if (o.tensor) {
      update(o.tensor->dim() == 0 ? s.zero : s.dim, o.tensor->dtype());
    } else {
      const Scalar& v = *o.scalar;
      update(s.wrapped, v.is_floating() ? default_dtype() : v.is_integral() ? kInt64 : kBool);
    }
  }
  auto r = combine(s.dim, combine(s.zero, s.wrapped));
  return r.value_or(default_dtype());
}

bool can_cast(DType from, DType to) {
  return category(from) <= category(to);
}

void check_fill_value(const Scalar& v, DType t, const char* op) {
  if (t == kBool || v.is_bool()) return;
  bool fits = true;
  if (v.is_integral() && is_integral(t)) {
    const int64_t i = v.to_int();
    fits = t == kUInt8   ? -255 <= i && i <= 255
           : t == kInt32 ? std::numeric_limits<int32_t>::lowest() <= i &&
                               i <= std::numeric_limits<int32_t>::max()
                         : true;
  } else if (is_integral(t)) {  // a floating value: NaN and infinities never fit
    const double d = v.to_double();
    fits = t == kUInt8   ? -255.0 <= d && d <= 255.0
           : t == kInt32 ? -2147483648.0 <= d && d <= 2147483647.0
                         : -9223372036854775808.0 <= d && d < 9223372036854775808.0;
  } else {
    const double d = std::abs(v.to_double());
    const double largest = t == kFloat16    ? 65504.0
                           : t == kBFloat16 ? 3.3895313892515355e38
                           : t == kFloat32  ? double(std::numeric_limits<float>::max())
                                            : std::numeric_limits<double>::infinity();
    fits = !std::isfinite(d) || d <= largest;
  }
  IGNIS_CHECK(
      fits,
      ValueError,
      "[{}] value {} cannot be converted to {} without overflow",
      op,
      v.is_integral() ? std::to_string(v.to_int()) : fmt::format("{}", v.to_double()),
      dtype_name(t));
}

Tensor scalar_like(const Scalar& v, DType dtype, Device device, const char* check_op) {
  if (check_op) check_fill_value(v, dtype, check_op);
  Tensor t = make_tensor({}, dtype, device);
  fill_unchecked(t, v);
  return t;
}

namespace {
/// A 0-dim CPU tensor may join an op on another device (as in PyTorch); others must match.
Tensor on_device(const Tensor& t, Device device, const char* op) {
  if (t.device() == device) return t;
  IGNIS_CHECK(t.dim() == 0 && t.is_cpu(), DeviceError,
              "[{}] expected all tensors on the same device, but found {} and {}", op,
              device.str(), t.device().str());
  return t.to(device);
}
}  // namespace

namespace {
/// PyTorch's autocast float32 list among the unary ops (include/ignis/amp.h).
bool float32_under_autocast(UnaryOp op) {
  switch (op) {
    case UnaryOp::exp:
    case UnaryOp::log:
    case UnaryOp::log1p:
    case UnaryOp::expm1:
    case UnaryOp::rsqrt:
    case UnaryOp::softplus:
      return true;
    default:
      return false;
  }
}
}  // namespace

Tensor unary_op(const Tensor& x, UnaryOp op, OpKind kind, const char* name,
                const UnaryParams& params, Tensor* out) {
  IGNIS_CHECK(x.defined(), ValueError, "[{}] undefined tensor", name);
  if (!out && autocast_pending() && float32_under_autocast(op)) {
    AutocastApplied once;  // Note [Autocast applies once]; in-place ops are never cast
    return unary_op(autocast_fp32(x), op, kind, name, params, nullptr);
  }
  if (out && needs_grad({out, &x}))
    return inplace_with_autograd(*out, name, [&](const Tensor& before) {
      return unary_op(before, op, kind, name, params, nullptr);
    });
  DType compute = x.dtype();
  DType result = compute;
  if (kind == OpKind::Floating) {
    compute = result = is_floating(x.dtype()) ? x.dtype() : default_dtype();
  } else if (kind == OpKind::Numeric) {
    IGNIS_CHECK(x.dtype() != kBool, DTypeError, "[{}] is not supported for bool tensors", name);
  } else {
    result = kBool;
  }
  Tensor in = x.to(compute);
  Tensor dst;
  if (out) {
    check_writable_layout(*out, name);
    IGNIS_CHECK(out->dtype() == result, DTypeError,
                "[{}_] result type {} cannot be stored in the {} tensor; use the out-of-place "
                "{} instead",
                name, dtype_name(result), dtype_name(out->dtype()), name);
    dst = *out;
  } else {
    dst = make_tensor_like_layout(x.sizes(), result, x.device(), &x);
  }
  if (out && partially_overlaps(dst, in)) in = in.clone();
  ensure_kernels_registered();
  UnaryKernelFn k = unary_kernels[int(x.device().type)][int(op)];
  IGNIS_CHECK(k != nullptr, NotImplementedError, "[{}] not implemented for {}", name,
              device_type_name(x.device().type));
  if (dst.numel() > 0) k(make_plan_memory_order({&dst, &in}, name), compute, params);
  if (!out && needs_grad({&in})) record_unary(op, name, in, dst, params);
  return dst;
}

Tensor binary_op(const ElementwiseOperand& a_op, const ElementwiseOperand& b_op, BinaryOp op,
                 kernels::BinaryKind kind, const char* name, const BinaryParams& params,
                 Tensor* out) {
  if (out && needs_grad({out, a_op.tensor, b_op.tensor}))
    return inplace_with_autograd(*out, name, [&](const Tensor& before) {
      const ElementwiseOperand& other = a_op.tensor == out ? b_op : a_op;
      return a_op.tensor == out ? binary_op(before, other, op, kind, name, params, nullptr)
                                : binary_op(other, before, op, kind, name, params, nullptr);
    });
  const Tensor* anchor = a_op.tensor ? a_op.tensor : b_op.tensor;
  IGNIS_CHECK(anchor && anchor->defined() && (!a_op.tensor || a_op.tensor->defined()) &&
                  (!b_op.tensor || b_op.tensor->defined()),
              ValueError, "[{}] undefined tensor", name);
  // The device of an operand with dims; between two 0-dim tensors, the one not on the CPU
  // (a 0-dim CPU tensor joins an op on another device as a scalar would, either way round).
  const auto has_dims = [](const Tensor* t) { return t && t->dim() > 0; };
  const auto off_cpu = [](const Tensor* t) { return t && !t->is_cpu(); };
  Device device = has_dims(a_op.tensor)   ? a_op.tensor->device()
                  : has_dims(b_op.tensor) ? b_op.tensor->device()
                  : off_cpu(b_op.tensor)  ? b_op.tensor->device()
                                          : anchor->device();
  if (out) device = out->device();
  DType promoted = result_type({a_op, b_op});
  DType compute = promoted;
  DType result = promoted;
  if (kind == kernels::BinaryKind::FloatOnly && !is_floating(promoted))
    compute = result = default_dtype();
  if (kind == kernels::BinaryKind::Compare) result = kBool;
  auto materialise = [&](const ElementwiseOperand& o) {
    return o.tensor ? on_device(*o.tensor, device, name).to(compute)
                    : scalar_like(*o.scalar, compute, device);
  };
  Tensor a = materialise(a_op), b = materialise(b_op);
  const Shape shape = broadcast_shape(a.sizes(), b.sizes(), name);
  Tensor dst;
  if (out) {
    check_writable_layout(*out, name);
    IGNIS_CHECK(shape == out->sizes(), ShapeError,
                "[{}_] result of shape {} cannot be written into a tensor of shape {}", name,
                shape_str(shape), shape_str(out->sizes()));
    IGNIS_CHECK(can_cast(result, out->dtype()), DTypeError,
                "[{}_] result type {} cannot be cast to the {} tensor written in place", name,
                dtype_name(result), dtype_name(out->dtype()));
    if (out->dtype() != result) {
      // Compute in the promoted type, then convert into the destination.
      Tensor tmp = binary_op(a, b, op, kind, name, params, nullptr);
      out->copy_(tmp);
      return *out;
    }
    dst = *out;
    if (partially_overlaps(dst, a)) a = a.clone();
    if (partially_overlaps(dst, b)) b = b.clone();
  } else {
    // The layout of the first operand that has the result's shape (PyTorch's order).
    const Tensor* like = a.sizes() == shape ? &a : (b.sizes() == shape ? &b : nullptr);
    dst = make_tensor_like_layout(shape, result, device, like);
  }
  ensure_kernels_registered();
  BinaryKernelFn k = binary_kernels[int(device.type)][int(op)];
  IGNIS_CHECK(k != nullptr, NotImplementedError, "[{}] not implemented for {}", name,
              device_type_name(device.type));
  if (dst.numel() > 0) {
    Tensor ae = a.expand(shape), be = b.expand(shape);
    k(make_plan_memory_order({&dst, &ae, &be}, name), compute, params);
  }
  if (!out && needs_grad({&a, &b})) record_binary(op, name, a, b, dst, params.alpha);
  return dst;
}

}  // namespace detail

namespace {
using detail::binary_op;
using detail::unary_op;
using Kind = kernels::BinaryKind;
using Op = ElementwiseOperand;

Tensor un(const Tensor& x, UnaryOp op, OpKind kind, const char* name, UnaryParams p = {}) {
  return unary_op(x, op, kind, name, p, nullptr);
}
Tensor& un_(Tensor& x, UnaryOp op, OpKind kind, const char* name, UnaryParams p = {}) {
  unary_op(x, op, kind, name, p, &x);
  return x;
}
Tensor bin(Op a, Op b, BinaryOp op, Kind kind, const char* name, double alpha = 1) {
  return binary_op(a, b, op, kind, name, BinaryParams{alpha}, nullptr);
}
Tensor& bin_(Tensor& a, Op b, BinaryOp op, Kind kind, const char* name, double alpha = 1) {
  binary_op(Op(a), b, op, kind, name, BinaryParams{alpha}, &a);
  return a;
}

void check_not_bool_sub(const Op& a, const Op& b) {
  const bool ab = a.tensor ? a.tensor->dtype() == kBool : a.scalar->is_bool();
  const bool bb = b.tensor ? b.tensor->dtype() == kBool : b.scalar->is_bool();
  IGNIS_CHECK(!(ab || bb), DTypeError,
              "[sub] subtraction with bool tensors is not supported; use logical_xor or ~ instead");
}

BinaryOp div_op(RoundingMode m) {
  return m == RoundingMode::True    ? BinaryOp::div
         : m == RoundingMode::Floor ? BinaryOp::div_floor
                                    : BinaryOp::div_trunc;
}

/// Integer floor/trunc division by zero is undefined behaviour in C++; PyTorch raises.
void check_integer_divisor(const Op& a, const Op& b, RoundingMode m) {
  if (m == RoundingMode::True) return;
  const DType t = detail::result_type({a, b});
  if (is_floating(t)) return;
  const bool zero = b.tensor ? any(eq(*b.tensor, 0)).item<bool>() : b.scalar->to_int() == 0;
  IGNIS_CHECK(!zero, ValueError, "[div] integer division by zero");
}

void check_pow_exponent(const Op& base, const Op& e) {
  const DType t = detail::result_type({base, e});
  if (is_floating(t) || t == kBool) return;
  const bool negative = e.tensor ? any(lt(*e.tensor, 0)).item<bool>() : e.scalar->to_int() < 0;
  IGNIS_CHECK(!negative, ValueError, "[pow] integers to negative integer powers are not allowed");
}
}  // namespace

// ---- binary arithmetic ----------------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return bin(a, b, BinaryOp::add, Kind::Arithmetic, "add", alpha.to_double());
}
Tensor add(const Tensor& a, const Scalar& b) { return bin(a, b, BinaryOp::add, Kind::Arithmetic, "add"); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_not_bool_sub(a, b);
  return bin(a, b, BinaryOp::sub, Kind::Arithmetic, "sub", alpha.to_double());
}
Tensor sub(const Tensor& a, const Scalar& b) {
  check_not_bool_sub(a, b);
  return bin(a, b, BinaryOp::sub, Kind::Arithmetic, "sub");
}
Tensor mul(const Tensor& a, const Tensor& b) { return bin(a, b, BinaryOp::mul, Kind::Arithmetic, "mul"); }
Tensor mul(const Tensor& a, const Scalar& b) { return bin(a, b, BinaryOp::mul, Kind::Arithmetic, "mul"); }
Tensor div(const Tensor& a, const Tensor& b, RoundingMode m) {
  check_integer_divisor(a, b, m);
  return bin(a, b, div_op(m), m == RoundingMode::True ? Kind::FloatOnly : Kind::Arithmetic, "div");
}
Tensor div(const Tensor& a, const Scalar& b, RoundingMode m) {
  check_integer_divisor(a, b, m);
  return bin(a, b, div_op(m), m == RoundingMode::True ? Kind::FloatOnly : Kind::Arithmetic, "div");
}
Tensor floor_divide(const Tensor& a, const Tensor& b) { return div(a, b, RoundingMode::Floor); }
Tensor pow(const Tensor& base, const Tensor& e) {
  if (detail::autocast_pending()) {  // float32; Note [Autocast applies once]
    detail::AutocastApplied once;
    return pow(detail::autocast_fp32(base), detail::autocast_fp32(e));
  }
  check_pow_exponent(base, e);
  return bin(base, e, BinaryOp::pow, Kind::Arithmetic, "pow");
}
Tensor pow(const Tensor& base, const Scalar& e) {
  if (detail::autocast_pending()) {  // float32; Note [Autocast applies once]
    detail::AutocastApplied once;
    return pow(detail::autocast_fp32(base), e);
  }
  check_pow_exponent(base, e);
  return bin(base, e, BinaryOp::pow, Kind::Arithmetic, "pow");
}
Tensor pow(const Scalar& base, const Tensor& e) {
  if (detail::autocast_pending()) {  // float32; Note [Autocast applies once]
    detail::AutocastApplied once;
    return pow(base, detail::autocast_fp32(e));
  }
  check_pow_exponent(base, e);
  return bin(base, e, BinaryOp::pow, Kind::Arithmetic, "pow");
}
Tensor maximum(const Tensor& a, const Tensor& b) { return bin(a, b, BinaryOp::maximum, Kind::Arithmetic, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) { return bin(a, b, BinaryOp::minimum, Kind::Arithmetic, "minimum"); }

Tensor& add_(Tensor& a, const Tensor& b, const Scalar& alpha) {
  return bin_(a, b, BinaryOp::add, Kind::Arithmetic, "add", alpha.to_double());
}
Tensor& sub_(Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_not_bool_sub(a, b);
  return bin_(a, b, BinaryOp::sub, Kind::Arithmetic, "sub", alpha.to_double());
}
Tensor& mul_(Tensor& a, const Tensor& b) { return bin_(a, b, BinaryOp::mul, Kind::Arithmetic, "mul"); }
Tensor& div_(Tensor& a, const Tensor& b, RoundingMode m) {
  check_integer_divisor(a, b, m);
  return bin_(a, b, div_op(m), m == RoundingMode::True ? Kind::FloatOnly : Kind::Arithmetic, "div");
}
Tensor& Tensor::add_(const Scalar& o) { return bin_(*this, o, BinaryOp::add, Kind::Arithmetic, "add"); }
Tensor& Tensor::sub_(const Scalar& o) {
  check_not_bool_sub(*this, o);
  return bin_(*this, o, BinaryOp::sub, Kind::Arithmetic, "sub");
}
Tensor& Tensor::mul_(const Scalar& o) { return bin_(*this, o, BinaryOp::mul, Kind::Arithmetic, "mul"); }
Tensor& Tensor::div_(const Scalar& o, RoundingMode m) {
  check_integer_divisor(*this, o, m);
  return bin_(*this, o, div_op(m), m == RoundingMode::True ? Kind::FloatOnly : Kind::Arithmetic, "div");
}
Tensor& Tensor::pow_(const Scalar& e) {
  check_pow_exponent(*this, e);
  return bin_(*this, e, BinaryOp::pow, Kind::Arithmetic, "pow");
}

// ---- comparisons and logic --------------------------------------------------------------------
#define IGNIS_DEFINE_COMPARE(NAME)                                                      \
  Tensor NAME(const Tensor& a, const Tensor& b) {                                      \
    return bin(a, b, BinaryOp::NAME, Kind::Compare, #NAME);                            \
  }                                                                                    \
  Tensor NAME(const Tensor& a, const Scalar& b) {                                      \
    return bin(a, b, BinaryOp::NAME, Kind::Compare, #NAME);                            \
  }
IGNIS_DEFINE_COMPARE(eq)
IGNIS_DEFINE_COMPARE(ne)
IGNIS_DEFINE_COMPARE(lt)
IGNIS_DEFINE_COMPARE(le)
IGNIS_DEFINE_COMPARE(gt)
IGNIS_DEFINE_COMPARE(ge)
#undef IGNIS_DEFINE_COMPARE
Tensor logical_and(const Tensor& a, const Tensor& b) { return bin(a, b, BinaryOp::logical_and, Kind::Compare, "logical_and"); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return bin(a, b, BinaryOp::logical_or, Kind::Compare, "logical_or"); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return bin(a, b, BinaryOp::logical_xor, Kind::Compare, "logical_xor"); }
Tensor logical_not(const Tensor& x) { return un(x, UnaryOp::logical_not, OpKind::Predicate, "logical_not"); }
Tensor isnan(const Tensor& x) { return un(x, UnaryOp::isnan, OpKind::Predicate, "isnan"); }
Tensor isinf(const Tensor& x) { return un(x, UnaryOp::isinf, OpKind::Predicate, "isinf"); }
Tensor isfinite(const Tensor& x) { return un(x, UnaryOp::isfinite, OpKind::Predicate, "isfinite"); }

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  if (a.numel() == 0) return true;
  return all(eq(a, b)).item<bool>();
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  broadcast_shape(a.sizes(), b.sizes(), "allclose");
  Tensor af = a.to(kFloat64), bf = b.to(kFloat64);
  Tensor close = le(abs(sub(af, bf)), add(mul(abs(bf), rtol), Scalar(atol)));
  close = logical_or(close, eq(af, bf));  // equal infinities
  if (equal_nan) close = logical_or(close, logical_and(isnan(af), isnan(bf)));
  return close.numel() == 0 || all(close).item<bool>();
}

// ---- unary math -------------------------------------------------------------------------------
#define IGNIS_DEFINE_UNARY(NAME, KIND)                                                  \
  Tensor NAME(const Tensor& x) { return un(x, UnaryOp::NAME, OpKind::KIND, #NAME); }
IGNIS_DEFINE_UNARY(abs, Numeric)
IGNIS_DEFINE_UNARY(sign, Numeric)
IGNIS_DEFINE_UNARY(relu, Numeric)
IGNIS_DEFINE_UNARY(exp, Floating)
IGNIS_DEFINE_UNARY(log, Floating)
IGNIS_DEFINE_UNARY(log1p, Floating)
IGNIS_DEFINE_UNARY(expm1, Floating)
IGNIS_DEFINE_UNARY(sqrt, Floating)
IGNIS_DEFINE_UNARY(rsqrt, Floating)
IGNIS_DEFINE_UNARY(sin, Floating)
IGNIS_DEFINE_UNARY(cos, Floating)
IGNIS_DEFINE_UNARY(tanh, Floating)
IGNIS_DEFINE_UNARY(sigmoid, Floating)
IGNIS_DEFINE_UNARY(silu, Floating)
IGNIS_DEFINE_UNARY(reciprocal, Floating)
#undef IGNIS_DEFINE_UNARY
Tensor neg(const Tensor& x) {
  IGNIS_CHECK(x.dtype() != kBool, DTypeError,
              "[neg] negation of a bool tensor is not supported; use logical_not instead");
  return un(x, UnaryOp::neg, OpKind::Numeric, "neg");
}
Tensor gelu(const Tensor& x, const std::string& approximate) {
  IGNIS_CHECK(approximate == "none" || approximate == "tanh", ValueError,
              "[gelu] approximate must be 'none' or 'tanh', got '{}'", approximate);
  return approximate == "tanh" ? un(x, UnaryOp::gelu_tanh, OpKind::Floating, "gelu")
                               : un(x, UnaryOp::gelu, OpKind::Floating, "gelu");
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  IGNIS_CHECK(beta != 0, ValueError, "[softplus] beta must not be 0");
  return un(x, UnaryOp::softplus, OpKind::Floating, "softplus", UnaryParams{beta, threshold});
}

namespace {
UnaryParams clamp_params(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  IGNIS_CHECK(lo || hi, ValueError, "[clamp] at least one of min and max must be given");
  return UnaryParams{lo ? lo->to_double() : 0, hi ? hi->to_double() : 0, bool(lo), bool(hi)};
}
/// An integer tensor's bound must fit its dtype, as PyTorch requires (a uint8 bound may also be
/// negative down to -255, which wraps as a conversion does): past int32 the kernels' conversion
/// of the bound would be undefined, and differ between devices.
void check_clamp_bound(const char* name, const std::optional<Scalar>& v, DType t) {
  if (!v || !v->is_integral() || !is_integral(t)) return;
  const int64_t i = v->to_int();
  auto fits = [&]<class T>(T) {
    constexpr int64_t hi = int64_t(std::numeric_limits<T>::max());
    return (std::is_unsigned_v<T> ? -hi : int64_t(std::numeric_limits<T>::lowest())) <= i &&
           i <= hi;
  };
  const bool ok = t == kUInt8 ? fits(uint8_t()) : t == kInt32 ? fits(int32_t()) : true;
  IGNIS_CHECK(
      ok,
      ValueError,
      "[clamp] {} = {} cannot be converted to {} without overflow",
      name,
      i,
      dtype_name(t));
}
DType clamp_type(const Tensor& x, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  const Scalar none_lo = lo.value_or(Scalar(int64_t(0))), none_hi = hi.value_or(Scalar(int64_t(0)));
  return detail::result_type({Op(x), Op(none_lo), Op(none_hi)});
}
}  // namespace

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  IGNIS_CHECK(x.dtype() != kBool, DTypeError, "[clamp] is not supported for bool tensors");
  const DType t = clamp_type(x, lo, hi);
  check_clamp_bound("min", lo, t);
  check_clamp_bound("max", hi, t);
  return un(x.to(t), UnaryOp::clamp, OpKind::Numeric, "clamp", clamp_params(lo, hi));
}
Tensor clamp_min(const Tensor& x, const Scalar& lo) { return clamp(x, lo, std::nullopt); }
Tensor clamp_max(const Tensor& x, const Scalar& hi) { return clamp(x, std::nullopt, hi); }
Tensor& clamp_(Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  IGNIS_CHECK(can_cast(clamp_type(x, lo, hi), x.dtype()), DTypeError,
              "[clamp_] float bounds cannot be applied in place to the {} tensor",
              dtype_name(x.dtype()));
  check_clamp_bound("min", lo, x.dtype());
  check_clamp_bound("max", hi, x.dtype());
  return un_(x, UnaryOp::clamp, OpKind::Numeric, "clamp", clamp_params(lo, hi));
}

#define IGNIS_DEFINE_UNARY_(NAME, KIND)                                                 \
  Tensor& NAME##_(Tensor& x) { return un_(x, UnaryOp::NAME, OpKind::KIND, #NAME); }
IGNIS_DEFINE_UNARY_(abs, Numeric)
IGNIS_DEFINE_UNARY_(relu, Numeric)
IGNIS_DEFINE_UNARY_(exp, Floating)
IGNIS_DEFINE_UNARY_(log, Floating)
IGNIS_DEFINE_UNARY_(sqrt, Floating)
IGNIS_DEFINE_UNARY_(sin, Floating)
IGNIS_DEFINE_UNARY_(cos, Floating)
IGNIS_DEFINE_UNARY_(tanh, Floating)
IGNIS_DEFINE_UNARY_(sigmoid, Floating)
#undef IGNIS_DEFINE_UNARY_
Tensor& neg_(Tensor& x) {
  IGNIS_CHECK(x.dtype() != kBool, DTypeError, "[neg_] negation of a bool tensor is not supported");
  return un_(x, UnaryOp::neg, OpKind::Numeric, "neg");
}

// ---- where ----------------------------------------------------------------------------------
namespace {
Tensor where_impl(const Tensor& cond, const Op& a_op, const Op& b_op) {
  IGNIS_CHECK(cond.dtype() == kBool, DTypeError,
              "[where] condition must be a bool tensor, got {}", dtype_name(cond.dtype()));
  const DType t = detail::result_type({a_op, b_op});
  const Device device = cond.device();
  auto make = [&](const Op& o) {
    return o.tensor ? o.tensor->to(t) : detail::scalar_like(*o.scalar, t, device, "where");
  };
  Tensor a = make(a_op), b = make(b_op);
  for (const Tensor* x : {&a, &b})
    IGNIS_CHECK(x->device() == device || x->dim() == 0, DeviceError,
                "[where] expected all tensors on {}, found one on {}", device.str(),
                x->device().str());
  if (a.device() != device) a = a.to(device);
  if (b.device() != device) b = b.to(device);
  const Shape shape = broadcast_shape(broadcast_shape(cond.sizes(), a.sizes(), "where"),
                                      b.sizes(), "where");
  const Tensor* like = a.sizes() == shape ? &a : (b.sizes() == shape ? &b : nullptr);
  Tensor out = make_tensor_like_layout(shape, t, device, like);
  if (out.numel() > 0) {  // an empty result still gets its node: an empty batch backpropagates
    Tensor ce = cond.expand(shape), ae = a.expand(shape), be = b.expand(shape);
    where_kernel.get(device)(make_plan_memory_order({&out, &ce, &ae, &be}, "where"));
  }
  if (needs_grad({&a, &b})) record_where(cond, a, b, out);
  return out;
}
}  // namespace

Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) { return where_impl(c, a, b); }
Tensor where(const Tensor& c, const Tensor& a, const Scalar& b) { return where_impl(c, a, b); }
Tensor where(const Tensor& c, const Scalar& a, const Tensor& b) { return where_impl(c, a, b); }

}  // namespace ignis
