// Elementwise binary functors, shared by the CPU loops and the CUDA kernels. Both inputs
// arrive in the same compute type (the front end promotes them first). `kind`:
//   Arithmetic - result in the promoted dtype
//   FloatOnly  - like Arithmetic, but integer/bool inputs are promoted to float32 first
//   Compare    - result is bool
// Adding an op: functor + enum + list entry here, front end in src/ops/elementwise.cpp.
#pragma once

#include "kernels/convert.h"
#include "kernels/fast_pow.h"
#include "kernels/host_device.h"

namespace ignis::kernels {

enum class BinaryOp : uint8_t {
  add, sub, mul, div_floor, div_trunc, maximum, minimum, pow,  // Arithmetic
  div,                                                         // FloatOnly
  eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor,  // Compare
  relu_backward,                                               // Arithmetic (internal)
  count
};
inline constexpr int kNumBinaryOps = int(BinaryOp::count);

enum class BinaryKind : uint8_t { Arithmetic, FloatOnly, Compare };

/// alpha of add/sub (a + alpha * b).
struct BinaryParams {
  double alpha = 1;
};

#define IGNIS_BINARY_HEADER(NAME, KIND)            \
  static constexpr BinaryOp id = BinaryOp::NAME;   \
  static constexpr BinaryKind kind = BinaryKind::KIND; \
  static constexpr const char* name = #NAME;

struct Add {
  IGNIS_BINARY_HEADER(add, Arithmetic)
  BinaryParams p;
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || b;  // bool + bool is logical or
    else
      return p.alpha == 1 ? T(a + b) : T(a + convert<T>(p.alpha) * b);
  }
};
struct Sub {
  IGNIS_BINARY_HEADER(sub, Arithmetic)
  BinaryParams p;
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    return p.alpha == 1 ? T(a - b) : T(a - convert<T>(p.alpha) * b);
  }
};
struct Mul {
  IGNIS_BINARY_HEADER(mul, Arithmetic)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return T(a * b);
  }
};
/// -a with two's-complement wrap-around: the quotient of a signed integer by -1. The lowest
/// value divided by -1 overflows, which x86's idiv traps (SIGFPE, the process killed) and a
/// GPU leaves unspecified; PyTorch's CPU kernels crash there too. Both devices give the lowest
/// value back instead.
template <class T>
IGNIS_HOST_DEVICE T negate_wrapping(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(a)));
}

/// Python's //: rounds toward negative infinity. Integer b == 0 is rejected by the front end.
struct DivFloor {
  IGNIS_BINARY_HEADER(div_floor, Arithmetic)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_unsigned_v<T>) return T(a / b);
      else {
        if (b == T(-1)) return negate_wrapping(a);
        T q = T(a / b);
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
      }
    } else {
      // As PyTorch: floor of the true quotient, computed from fmod to stay exact.
      if (b == T(0)) return a / b;
      T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
      if (div == T(0)) return std::copysign(T(0), a / b);
      T fl = std::floor(div);
      if (div - fl > T(0.5)) fl += T(1);
      return fl;
    }
  }
};
struct DivTrunc {
  IGNIS_BINARY_HEADER(div_trunc, Arithmetic)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      return b == T(-1) ? negate_wrapping(a) : T(a / b);
    else if constexpr (std::is_integral_v<T>)
      return T(a / b);
    else return std::trunc(a / b);
  }
};
struct Maximum {
  IGNIS_BINARY_HEADER(maximum, Arithmetic)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a > b ? a : b;
  }
};
struct Minimum {
  IGNIS_BINARY_HEADER(minimum, Arithmetic)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a < b ? a : b;
  }
};
struct Div {
  IGNIS_BINARY_HEADER(div, FloatOnly)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const { return a / b; }
};
/// pow on floats; exact integer pow by squaring when both operands are integers (negative
/// integer exponents are rejected by the front end, as in PyTorch). Float on the host is
/// fast_pow (src/kernels/fast_pow.h, vectorised; within 1 ulp), the device keeps powf.
struct Pow {
  IGNIS_BINARY_HEADER(pow, Arithmetic)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || !b;
    else if constexpr (std::is_integral_v<T>) {
      if (b < 0) return a == 1 ? T(1) : (a == T(-1) ? T((b & 1) ? -1 : 1) : T(0));
      T r = 1, base = a;
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) r = T(r * base);
        base = T(base * base);
      }
      return r;
    } else {
      if constexpr (kCompiledForHost && std::is_same_v<T, float>) {
        return b == 2.0f ? a * a : fast_pow(a, b);  // a select, so the loop stays vector code
      } else {
        if (b == T(2)) return a * a;  // as PyTorch: exact square
        return std::pow(a, b);
      }
    }
  }
};
/// relu's backward in one pass: the gradient a where the output b is positive, else 0 (a
/// select, not a product, so a NaN gradient where the unit is off gives 0 as in PyTorch).
struct ReluBackward {
  IGNIS_BINARY_HEADER(relu_backward, Arithmetic)
  template <class T> IGNIS_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else return b > T(0) ? a : T(0);
  }
};
#define IGNIS_COMPARE(STRUCT, NAME, EXPR)                                    \
  struct STRUCT {                                                            \
    IGNIS_BINARY_HEADER(NAME, Compare)                                       \
    template <class T> IGNIS_HOST_DEVICE bool operator()(T a, T b) const { return EXPR; } \
  };
IGNIS_COMPARE(Eq, eq, a == b)
IGNIS_COMPARE(Ne, ne, a != b)
IGNIS_COMPARE(Lt, lt, a < b)
IGNIS_COMPARE(Le, le, a <= b)
IGNIS_COMPARE(Gt, gt, a > b)
IGNIS_COMPARE(Ge, ge, a >= b)
IGNIS_COMPARE(LogicalAnd, logical_and, (a != T(0)) && (b != T(0)))
IGNIS_COMPARE(LogicalOr, logical_or, (a != T(0)) || (b != T(0)))
IGNIS_COMPARE(LogicalXor, logical_xor, (a != T(0)) != (b != T(0)))
#undef IGNIS_COMPARE
#undef IGNIS_BINARY_HEADER

using BinaryFunctors = TypeList<Add, Sub, Mul, DivFloor, DivTrunc, Maximum, Minimum, Div, Pow, Eq,
                                Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor,
                                ReluBackward>;

template <class Op>
IGNIS_HOST_DEVICE Op make_binary(const BinaryParams& p) {
  if constexpr (requires { Op{p}; }) return Op{p};
  else return Op{};
}

}  // namespace ignis::kernels
