// CUDA kernels for every unary functor of src/kernels/unary_ops.h, registered into
// unary_kernels: the same functors as the CPU loops (src/cpu/unary.cpp), so both backends
// compute the same function in the same compute type.
#include "core/dispatch.h"
#include "cuda/elementwise.cuh"
#include "kernels/unary_ops.h"

namespace ignis::cuda::detail {
namespace {
using namespace kernels;

template <class Op, class T>
constexpr bool accepts() {
  if constexpr (Op::kind == OpKind::Floating) return is_floating_v<T>;
  else if constexpr (Op::kind == OpKind::Numeric) return !std::is_same_v<T, bool>;
  else return true;
}

template <class Op, class T, class Out>
struct UnaryF {
  Op op;
  __device__ __forceinline__ Out operator()(T a) const { return Out(op(opmath_t<T>(a))); }
};

template <class Op>
void unary_kernel(const ElementwisePlan& p, DType compute, const UnaryParams& params) {
  visit_dtype(compute, [&]<class T>() {
    if constexpr (accepts<Op, T>()) {
      using Out = std::conditional_t<Op::kind == OpKind::Predicate, bool, T>;
      launch_elementwise<Out, T>(p, UnaryF<Op, T, Out>{make_unary<Op>(params)}, Op::name);
    } else {
      throw DTypeError(std::string("[") + Op::name + "] not supported for " +
                       dtype_name(compute));
    }
  });
}
}  // namespace

void register_unary() {
  for_each_type(UnaryFunctors{}, []<class Op>() {
    ignis::detail::unary_kernels[int(DeviceType::CUDA)][int(Op::id)] = &unary_kernel<Op>;
  });
}

}  // namespace ignis::cuda::detail
