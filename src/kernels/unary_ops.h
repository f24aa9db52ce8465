// Elementwise unary functors, written once for the CPU loops and the CUDA kernels.
// Each functor runs in the compute type (opmath_t: float for Half/BFloat16).
// `kind` says which input dtypes the op accepts and what it returns:
//   Floating  - float dtypes; integer/bool inputs are promoted to float32 first
//   Numeric   - every dtype except bool, result has the input dtype
//   Predicate - every dtype, result is bool
// Adding an op: a functor here + its entry in UnaryOp and UnaryFunctors, a front end in
// src/ops/elementwise.cpp, a row in the test table. The CPU and CUDA loops pick it up.
#pragma once

#include "kernels/convert.h"
#include "kernels/fast_math.h"
#include "kernels/fast_trig.h"
#include "kernels/host_device.h"

namespace ignis::kernels {

enum class UnaryOp : uint8_t {
  neg, abs, sign, relu, clamp,                                          // Numeric
  exp, log, log1p, expm1, sqrt, rsqrt, sin, cos, tanh, sigmoid,         // Floating
  gelu, gelu_tanh, silu, softplus, reciprocal, gelu_grad, gelu_tanh_grad,
  isnan, isinf, isfinite, logical_not,                                  // Predicate
  count
};
inline constexpr int kNumUnaryOps = int(UnaryOp::count);

enum class OpKind : uint8_t { Floating, Numeric, Predicate };

/// Scalar parameters of parameterised ops (clamp bounds, softplus beta/threshold).
struct UnaryParams {
  double a = 0, b = 0;
  bool has_a = false, has_b = false;
};

#define IGNIS_UNARY_HEADER(NAME, KIND)               \
  static constexpr UnaryOp id = UnaryOp::NAME;       \
  static constexpr OpKind kind = OpKind::KIND;       \
  static constexpr const char* name = #NAME;

struct Neg {
  IGNIS_UNARY_HEADER(neg, Numeric)
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const { return T(-x); }
};
struct Abs {
  IGNIS_UNARY_HEADER(abs, Numeric)
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (std::is_integral_v<T>) return x < 0 ? T(-x) : x;
    else return std::fabs(x);
  }
};
struct Sign {
  IGNIS_UNARY_HEADER(sign, Numeric)
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return T(x > 0);
    else return T((T(0) < x) - (x < T(0)));  // sign(NaN) = 0, as PyTorch's CPU kernel
  }
};
struct Relu {
  IGNIS_UNARY_HEADER(relu, Numeric)
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const {
    return (x > T(0) || is_nan(x)) ? x : T(0);
  }
};
/// clamp(x, a, b) with either bound optional; NaN passes through (both comparisons are
/// false). Two selects against bounds widened to the type's range when absent: no branch in
/// the element loop, so the CPU loops vectorise it.
struct Clamp {
  IGNIS_UNARY_HEADER(clamp, Numeric)
  UnaryParams p;
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const { return specialize<T>()(x); }

  /// The bounds converted to T once (see specialized()).
  template <class T>
  struct Bounds {
    T lo, hi;
    IGNIS_HOST_DEVICE T operator()(T x) const {
      x = x < lo ? lo : x;
      return x > hi ? hi : x;
    }
  };
  template <class T> IGNIS_HOST_DEVICE Bounds<T> specialize() const {
    return {p.has_a ? convert<T>(p.a) : lowest<T>(), p.has_b ? convert<T>(p.b) : highest<T>()};
  }

 private:
  template <class T> IGNIS_HOST_DEVICE static T lowest() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  template <class T> IGNIS_HOST_DEVICE static T highest() {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
};
// Float exp, expm1, log, log1p, tanh, sigmoid, SiLU, softplus and the tanh GELU (also
// bf16/fp16, computed in float) take fast_exp, fast_expm1, fast_log, fast_log1p and fast_tanh
// (src/kernels/fast_math.h, within 2 ulp): std::exp and the rest are scalar libm calls in the
// CPU loops. Double keeps libm.
struct Exp {
  IGNIS_UNARY_HEADER(exp, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return fast_exp(x);
    else return std::exp(x);
  }
};
struct Log {
  IGNIS_UNARY_HEADER(log, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return fast_log(x);
    else return std::log(x);
  }
};
struct Log1p {
  IGNIS_UNARY_HEADER(log1p, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return fast_log1p(x);
    else return std::log1p(x);
  }
};
struct Expm1 {
  IGNIS_UNARY_HEADER(expm1, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return fast_expm1(x);
    else return std::expm1(x);
  }
};
struct Sqrt {
  IGNIS_UNARY_HEADER(sqrt, Floating)
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const { return std::sqrt(x); }
};
struct Rsqrt {
  IGNIS_UNARY_HEADER(rsqrt, Floating)
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const { return T(1) / std::sqrt(x); }
};
// Float sin and cos on the host take fast_sin and fast_cos (src/kernels/fast_trig.h: a table
// lookup in host memory); CUDA kernels keep the device's sinf and cosf. The CPU loops check a
// block of values for the largest tier and run upto<tier>, which gives the same bits with only
// the reductions that tier needs.
struct Sin {
  IGNIS_UNARY_HEADER(sin, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (kCompiledForHost && std::is_same_v<T, float>) return fast_sin(x);
    else return std::sin(x);
  }
  static constexpr int kTiers = 3;
  static int tier(float x) { return trig_tier(x); }
  template <int kTier> static float upto(float x) { return fast_sin_upto<kTier>(x); }
};
struct Cos {
  IGNIS_UNARY_HEADER(cos, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (kCompiledForHost && std::is_same_v<T, float>) return fast_cos(x);
    else return std::cos(x);
  }
  static constexpr int kTiers = 3;
  static int tier(float x) { return trig_tier(x); }
  template <int kTier> static float upto(float x) { return fast_cos_upto<kTier>(x); }
};
struct Tanh {
  IGNIS_UNARY_HEADER(tanh, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return fast_tanh(x);
    else return std::tanh(x);
  }
};
struct Sigmoid {
  IGNIS_UNARY_HEADER(sigmoid, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return 1.0f / (1.0f + fast_exp(-x));
    else return T(1) / (T(1) + std::exp(-x));
  }
};
/// Exact GELU: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
// Float GELU and its gradient (also bf16/fp16, computed in float) take normal_cdf and
// fast_exp (src/kernels/fast_math.h): branch-free, so the CPU loops vectorise (std::erf is a
// scalar libm call, and 1 + erf cancels to 0 in the lower tail); double keeps std::erf.
struct Gelu {
  IGNIS_UNARY_HEADER(gelu, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return x * normal_cdf(x);
    else return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
  }
};
/// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluTanh {
  IGNIS_UNARY_HEADER(gelu_tanh, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
    if constexpr (std::is_same_v<T, float>) return 0.5f * x * (1.0f + fast_tanh(inner));
    else return T(0.5) * x * (T(1) + std::tanh(inner));
  }
};
struct Silu {
  IGNIS_UNARY_HEADER(silu, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return x / (1.0f + fast_exp(-x));
    else return x / (T(1) + std::exp(-x));
  }
};
/// softplus with beta = p.a and threshold = p.b: linear where beta x > threshold.
struct Softplus {
  IGNIS_UNARY_HEADER(softplus, Floating)
  UnaryParams p;
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    const T beta = T(p.a);
    const T bx = beta * x;
    if constexpr (std::is_same_v<T, float>) return bx > T(p.b) ? x : fast_log1p(fast_exp(bx)) / beta;
    else return bx > T(p.b) ? x : std::log1p(std::exp(bx)) / beta;
  }
};
struct Reciprocal {
  IGNIS_UNARY_HEADER(reciprocal, Floating)
  template <class T> IGNIS_HOST_DEVICE T operator()(T x) const { return T(1) / x; }
};
/// d/dx of exact GELU: Phi(x) + x phi(x) (used by gelu's backward).
struct GeluGrad {
  IGNIS_UNARY_HEADER(gelu_grad, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) {
      return normal_cdf(x) + x * (fast_exp(-0.5f * x * x) * 0.39894228040143267794f);
    } else {
      const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
      const T pdf = std::exp(T(-0.5) * x * x) * T(0.39894228040143267794);
      return cdf + x * pdf;
    }
  }
};
/// d/dx of the tanh approximation of GELU.
struct GeluTanhGrad {
  IGNIS_UNARY_HEADER(gelu_tanh_grad, Floating)
  template <class T> IGNIS_HOST_DEVICE_ALWAYS_INLINE T operator()(T x) const {
    const T k = T(0.79788456080286535588), c = T(0.044715);
    T t;
    if constexpr (std::is_same_v<T, float>) t = fast_tanh(k * (x + c * x * x * x));
    else t = std::tanh(k * (x + c * x * x * x));
    return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * c * x * x);
  }
};
struct IsNan {
  IGNIS_UNARY_HEADER(isnan, Predicate)
  template <class T> IGNIS_HOST_DEVICE bool operator()(T x) const { return is_nan(x); }
};
struct IsInf {
  IGNIS_UNARY_HEADER(isinf, Predicate)
  template <class T> IGNIS_HOST_DEVICE bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::isinf(x);
    else return false;
  }
};
struct IsFinite {
  IGNIS_UNARY_HEADER(isfinite, Predicate)
  template <class T> IGNIS_HOST_DEVICE bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::isfinite(x);
    else return true;
  }
};
struct LogicalNot {
  IGNIS_UNARY_HEADER(logical_not, Predicate)
  template <class T> IGNIS_HOST_DEVICE bool operator()(T x) const { return !(x != T(0)); }
};
#undef IGNIS_UNARY_HEADER

using UnaryFunctors =
    TypeList<Neg, Abs, Sign, Relu, Clamp, Exp, Log, Log1p, Expm1, Sqrt, Rsqrt, Sin, Cos, Tanh,
             Sigmoid, Gelu, GeluTanh, Silu, Softplus, Reciprocal, GeluGrad, GeluTanhGrad, IsNan, IsInf, IsFinite,
             LogicalNot>;

/// Builds a functor, handing it the parameters when it takes any.
template <class Op>
IGNIS_HOST_DEVICE Op make_unary(const UnaryParams& p) {
  if constexpr (requires { Op{p}; }) return Op{p};
  else return Op{};
}

/// What a loop over values of type T calls: op.specialize<T>() when the functor has one (its
/// parameters converted to T once, outside the element loop; with them worked out per
/// element, GCC left clamp's streaming CPU loop scalar: 16M floats in 18.9 ms against neg's
/// 2.9), else op itself.
template <class T, class Op>
IGNIS_HOST_DEVICE auto specialized(const Op& op) {
  if constexpr (requires { op.template specialize<T>(); }) return op.template specialize<T>();
  else return op;
}

}  // namespace ignis::kernels
