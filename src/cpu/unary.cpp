// CPU loops for every unary functor of src/kernels/unary_ops.h, registered into
// unary_kernels. One instantiation per (functor, accepted dtype); nothing here names an op.
#include "core/dispatch.h"
#include "cpu/cpu_features.h"  // use_avx512
#include "cpu/loops.h"
#include "kernels/unary_ops.h"

namespace ignis::cpu {
namespace {
using namespace kernels;

template <class Op, class T>
constexpr bool accepts() {
  if constexpr (Op::kind == OpKind::Floating) return is_floating_v<T>;
  else if constexpr (Op::kind == OpKind::Numeric) return !std::is_same_v<T, bool>;
  else return true;
}

/// Ops whose float math (a polynomial exp, log, tanh, sin or erfc per element) costs more than
/// their memory traffic: their contiguous runs are compiled again for AVX-512, 16 floats a
/// vector, and that copy is picked at run time (measured on [4096,4096] at one thread, AVX2
/// against AVX-512: exp 9.8-9.9 ms against 4.3-6.4, tanh 13.3-13.4 against 6.7, exact GELU
/// 17.7-17.9 against 7.9-8.4; IGNIS_CPU_NO_AVX512=1 forces the AVX2 copy).
template <class Op, class T>
constexpr bool kMathBound = std::is_same_v<opmath_t<T>, float> &&
                            (Op::id == UnaryOp::exp || Op::id == UnaryOp::expm1 ||
                             Op::id == UnaryOp::log || Op::id == UnaryOp::log1p ||
                             Op::id == UnaryOp::sin || Op::id == UnaryOp::cos ||
                             Op::id == UnaryOp::tanh || Op::id == UnaryOp::sigmoid ||
                             Op::id == UnaryOp::silu || Op::id == UnaryOp::softplus ||
                             Op::id == UnaryOp::gelu || Op::id == UnaryOp::gelu_tanh ||
                             Op::id == UnaryOp::gelu_grad || Op::id == UnaryOp::gelu_tanh_grad);

/// Functors whose float value takes one of kTiers forms by the input's magnitude, cheaper the
/// lower the tier (sin, cos: src/kernels/fast_trig.h): F::tier(x), and F::upto<k>(x), equal
/// to F()(x) wherever tier(x) <= k.
template <class F>
constexpr bool kHasTiers = requires { F::template upto<0>(0.0f); };

/// o[i] = op(a[i]) over a contiguous run; inlined into each per-ISA wrapper below.
/// always_inline on the element lambdas: GCC otherwise leaves a large element body (softplus:
/// an exp and a log1p) as a call per element, and the loop runs scalar.
template <class Out, class T, class F>
[[gnu::always_inline]] inline void contiguous_run(
    const F& op, Out* o, const T* a, int64_t n, bool stream) {
  using C = opmath_t<T>;
  if constexpr (kHasTiers<F> && std::is_same_v<C, float>) {
    static_assert(F::kTiers == 3);
    // Blocks of 256 values (their largest tier found in a vectorised pass, then computed) take
    // the cheapest form that holds for all of them (sin of [4096,4096] floats in [-5, 5] at
    // one thread on Zen 4: 14.1 ms with the float64 reduction, 7.8 with the float one).
    constexpr int64_t kBlock = 256;
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      const T* ab = a + b;
      int tier = 0;
#pragma omp simd reduction(max : tier)
      for (int64_t i = 0; i < m; ++i) tier = std::max(tier, F::tier(C(ab[i])));
      auto write = [&]<int kTier>() __attribute__((always_inline)) {
        write_contiguous(o + b, m, stream, [&](int64_t i) __attribute__((always_inline)) {
          return Out(F::template upto<kTier>(C(ab[i])));
        });
      };
      if (tier == 0) write.template operator()<0>();
      else if (tier == 1) write.template operator()<1>();
      else write.template operator()<2>();
    }
  } else {
    auto value_at = [&](int64_t i) __attribute__((always_inline)) { return Out(op(C(a[i]))); };
    write_contiguous(o, n, stream, value_at);
  }
}
template <class Out, class T, class F>
void contiguous_run_base(const F& op, Out* o, const T* a, int64_t n, bool stream) {
  contiguous_run(op, o, a, n, stream);
}
#if defined(__x86_64__) && defined(__GNUC__)
template <class Out, class T, class F>
[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl,fma")]] void contiguous_run_avx512(
    const F& op, Out* o, const T* a, int64_t n, bool stream) {
  contiguous_run(op, o, a, n, stream);
}
#endif

template <class Op, class T>
void unary_loop(const ElementwisePlan& p, const UnaryParams& params) {
  using C = opmath_t<T>;
  using Out = std::conditional_t<Op::kind == OpKind::Predicate, bool, T>;
  const auto op = specialized<C>(make_unary<Op>(params));
  // Math-bound ops keep normal stores: streamed, exp of [4096,4096] took 7.4-9.2 ms at one
  // thread against 3.9 (Note [Streaming stores]).
  const bool stream = !kMathBound<Op, T> && use_streaming_stores<Out>(p.numel);
  [[maybe_unused]] auto run = &contiguous_run_base<Out, T, decltype(op)>;
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (kMathBound<Op, T>)
    if (use_avx512()) run = &contiguous_run_avx512<Out, T, decltype(op)>;
#endif
  cpu_for_each_streaming(p, stream, [&](char* const* d, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(d[0]);
    const T* a = reinterpret_cast<const T*>(d[1]);
    if (s[0] == 1 && s[1] == 1) {
      // Through the picked copy only where there are two; other ops inline their loop here.
      if constexpr (kMathBound<Op, T>) run(op, o, a, n, stream);
      else contiguous_run(op, o, a, n, stream);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i * s[0]] = Out(op(C(a[i * s[1]])));
    }
  });
}

template <class Op>
void unary_kernel(const ElementwisePlan& p, DType compute, const UnaryParams& params) {
  visit_dtype(compute, [&]<class T>() {
    if constexpr (accepts<Op, T>()) unary_loop<Op, T>(p, params);
    else throw DTypeError(std::string("[") + Op::name + "] not supported for " + dtype_name(compute));
  });
}
}  // namespace

void register_unary_cpu() {
  for_each_type(UnaryFunctors{}, []<class Op>() {
    detail::unary_kernels[int(DeviceType::CPU)][int(Op::id)] = &unary_kernel<Op>;
  });
}

}  // namespace ignis::cpu
