// CUDA kernels for every binary functor of src/kernels/binary_ops.h, registered into
// binary_kernels (the CUDA twin of src/cpu/binary.cpp). A broadcast operand arrives with
// stride 0 and takes the strided path.
#include "core/dispatch.h"
#include "cuda/elementwise.cuh"
#include "kernels/binary_ops.h"

namespace ignis::cuda::detail {
namespace {
using namespace kernels;

template <class Op, class T>
constexpr bool accepts() {
  if constexpr (Op::kind == BinaryKind::FloatOnly) return is_floating_v<T>;
  else return true;
}

template <class Op, class T, class Out>
struct BinaryF {
  Op op;
  __device__ __forceinline__ Out operator()(T a, T b) const {
    using C = opmath_t<T>;
    return Out(op(C(a), C(b)));
  }
};

template <class Op>
void binary_kernel(const ElementwisePlan& p, DType compute, const BinaryParams& params) {
  visit_dtype(compute, [&]<class T>() {
    if constexpr (accepts<Op, T>()) {
      using Out = std::conditional_t<Op::kind == BinaryKind::Compare, bool, T>;
      launch_elementwise<Out, T, T>(p, BinaryF<Op, T, Out>{make_binary<Op>(params)}, Op::name);
    } else {
      throw DTypeError(std::string("[") + Op::name + "] not supported for " +
                       dtype_name(compute));
    }
  });
}
}  // namespace

void register_binary() {
  for_each_type(BinaryFunctors{}, []<class Op>() {
    ignis::detail::binary_kernels[int(DeviceType::CUDA)][int(Op::id)] = &binary_kernel<Op>;
  });
}

}  // namespace ignis::cuda::detail
