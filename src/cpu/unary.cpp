// CPU loops for every unary functor of src/kernels/unary_ops.h, registered into
// unary_kernels. One instantiation per (functor, accepted dtype); nothing here names an op.
#include "core/dispatch.h"
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

template <class Op, class T>
void unary_loop(const ElementwisePlan& p, const UnaryParams& params) {
  using C = opmath_t<T>;
  using Out = std::conditional_t<Op::kind == OpKind::Predicate, bool, T>;
  const auto op = specialized<C>(make_unary<Op>(params));
  const bool stream = use_streaming_stores<Out>(p.numel);
  cpu_for_each(p, [&](char* const* d, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(d[0]);
    const T* a = reinterpret_cast<const T*>(d[1]);
    if (s[0] == 1 && s[1] == 1) {
      write_contiguous(o, n, stream, [&](int64_t i) { return Out(op(C(a[i]))); });
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
