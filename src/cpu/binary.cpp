// CPU loops for every binary functor of src/kernels/binary_ops.h, registered into
// binary_kernels, with fast paths for contiguous operands and a broadcast scalar operand.
#include "core/dispatch.h"
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

template <class Op, class T>
void binary_loop(const ElementwisePlan& p, const BinaryParams& params) {
  using C = opmath_t<T>;
  using Out = std::conditional_t<Op::kind == BinaryKind::Compare, bool, T>;
  const Op op = make_binary<Op>(params);
  const bool stream = use_streaming_stores<Out>(p.numel);
  cpu_for_each_streaming(p, stream, [&](char* const* d, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(d[0]);
    const T* a = reinterpret_cast<const T*>(d[1]);
    const T* b = reinterpret_cast<const T*>(d[2]);
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
      write_contiguous(o, n, stream, [&](int64_t i) { return Out(op(C(a[i]), C(b[i]))); });
    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {
      const C bv = C(b[0]);
      write_contiguous(o, n, stream, [&](int64_t i) { return Out(op(C(a[i]), bv)); });
    } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
      const C av = C(a[0]);
      write_contiguous(o, n, stream, [&](int64_t i) { return Out(op(av, C(b[i]))); });
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
