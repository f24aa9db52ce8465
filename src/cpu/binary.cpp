// CPU loops for every binary functor of src/kernels/binary_ops.h, registered into
// binary_kernels, with fast paths for contiguous operands and a broadcast scalar operand.
#include "core/dispatch.h"
#include "cpu/cpu_features.h"  // use_avx512
#include "cpu/loops.h"
#include "kernels/binary_ops.h"

namespace ignis::cpu {
namespace {
using namespace kernels;

template <class Op, class T>
constexpr bool accepts() {
  if constexpr (Op::kind == BinaryKind::FloatOnly) return is_floating_v<T>;
  else return true;
}

/// pow on floats is math-bound (fast_pow: a float64 logarithm and exponential per element), so
/// its contiguous runs are compiled again for AVX-512 and that copy is picked at run time, as
/// for the unary ops in src/cpu/unary.cpp (x^2.5 of [4096,4096] at one thread: AVX2 against
/// AVX-512 in the measurements of docs/performance.md).
template <class Op, class T>
constexpr bool kMathBound = Op::id == BinaryOp::pow && std::is_same_v<opmath_t<T>, float>;

/// o[i] = op(a[i], b[i]) over a contiguous run, where a stride of 0 (sa or sb) broadcasts
/// that operand's one value. always_inline on the element lambdas: GCC otherwise may leave a
/// large element body (fast_pow) as a call per element, and the loop runs scalar.
template <class Out, class T, class F>
[[gnu::always_inline]] inline void contiguous_run(
    const F& op, Out* o, const T* a, const T* b, int64_t sa, int64_t sb, int64_t n, bool stream) {
  using C = opmath_t<T>;
  if (sb == 0) {
    const C bv = C(b[0]);
    write_contiguous(o, n, stream, [&](int64_t i) __attribute__((always_inline)) {
      return Out(op(C(a[i]), bv));
    });
  } else if (sa == 0) {
    const C av = C(a[0]);
    write_contiguous(o, n, stream, [&](int64_t i) __attribute__((always_inline)) {
      return Out(op(av, C(b[i])));
    });
  } else {
    write_contiguous(o, n, stream, [&](int64_t i) __attribute__((always_inline)) {
      return Out(op(C(a[i]), C(b[i])));
    });
  }
}
template <class Out, class T, class F>
void contiguous_run_base(
    const F& op, Out* o, const T* a, const T* b, int64_t sa, int64_t sb, int64_t n, bool stream) {
  contiguous_run(op, o, a, b, sa, sb, n, stream);
}
#if defined(__x86_64__) && defined(__GNUC__)
template <class Out, class T, class F>
[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl,fma")]] void contiguous_run_avx512(
    const F& op, Out* o, const T* a, const T* b, int64_t sa, int64_t sb, int64_t n, bool stream) {
  contiguous_run(op, o, a, b, sa, sb, n, stream);
}
#endif

template <class Op, class T>
void binary_loop(const ElementwisePlan& p, const BinaryParams& params) {
  using C = opmath_t<T>;
  using Out = std::conditional_t<Op::kind == BinaryKind::Compare, bool, T>;
  const Op op = make_binary<Op>(params);
  // Math-bound ops keep normal stores (Note [Streaming stores]).
  const bool stream = !kMathBound<Op, T> && use_streaming_stores<Out>(p.numel);
  [[maybe_unused]] auto run = &contiguous_run_base<Out, T, Op>;
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (kMathBound<Op, T>)
    if (use_avx512()) run = &contiguous_run_avx512<Out, T, Op>;
#endif
  cpu_for_each_streaming(p, stream, [&](char* const* d, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(d[0]);
    const T* a = reinterpret_cast<const T*>(d[1]);
    const T* b = reinterpret_cast<const T*>(d[2]);
    if (s[0] == 1 && (s[1] == 1 || s[1] == 0) && (s[2] == 1 || s[2] == 0) && (s[1] | s[2]) != 0) {
      // Through the picked copy only where there are two; other ops inline their loop here.
      if constexpr (kMathBound<Op, T>) run(op, o, a, b, s[1], s[2], n, stream);
      else contiguous_run(op, o, a, b, s[1], s[2], n, stream);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * s[0]] = Out(op(C(a[i * s[1]]), C(b[i * s[2]])));
    }
  });
}

template <class Op>
void binary_kernel(const ElementwisePlan& p, DType compute, const BinaryParams& params) {
  visit_dtype(compute, [&]<class T>() {
    if constexpr (accepts<Op, T>()) binary_loop<Op, T>(p, params);
    else throw DTypeError(std::string("[") + Op::name + "] not supported for " + dtype_name(compute));
  });
}
}  // namespace

void register_binary_cpu() {
  for_each_type(BinaryFunctors{}, []<class Op>() {
    detail::binary_kernels[int(DeviceType::CPU)][int(Op::id)] = &binary_kernel<Op>;
  });
}

}  // namespace ignis::cpu
