// The CUDA backend's registration (one call per kernel family, as src/cpu/register.cpp).
//
// The CUDA kernels themselves arrive with the CUDA backend (device allocator, streams,
// copies). Until then this translation unit proves the build path and the shared-math
// design: it instantiates a device kernel for every functor of src/kernels for float and
// the 16-bit types, so a functor that is not valid device code fails the build here, on any
// machine with the toolkit, rather than later on a GPU machine.
#include "kernels/binary_ops.h"
#include "kernels/convert.h"
#include "kernels/unary_ops.h"

namespace ignis::cuda {
namespace {
using namespace kernels;

template <class Op, class T>
__global__ void unary_contiguous_kernel(T* out, const T* in, int64_t n, UnaryParams params) {
  const Op op = make_unary<Op>(params);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (Op::kind == OpKind::Predicate) out[i] = T(float(op(opmath_t<T>(in[i]))));
    else out[i] = T(op(opmath_t<T>(in[i])));
  }
}

template <class Op, class T>
__global__ void binary_contiguous_kernel(T* out, const T* a, const T* b, int64_t n,
                                         BinaryParams params) {
  const Op op = make_binary<Op>(params);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = convert<T>(op(opmath_t<T>(a[i]), opmath_t<T>(b[i])));
}

/// Takes the address of each instantiation so nvcc must generate its device code.
[[maybe_unused]] void instantiate_all() {
  volatile const void* sink = nullptr;
  for_each_type(UnaryFunctors{}, [&]<class Op>() {
    sink = reinterpret_cast<const void*>(&unary_contiguous_kernel<Op, float>);
    if constexpr (Op::kind != OpKind::Numeric) {
      sink = reinterpret_cast<const void*>(&unary_contiguous_kernel<Op, Half>);
      sink = reinterpret_cast<const void*>(&unary_contiguous_kernel<Op, BFloat16>);
    }
  });
  for_each_type(BinaryFunctors{}, [&]<class Op>() {
    sink = reinterpret_cast<const void*>(&binary_contiguous_kernel<Op, float>);
    sink = reinterpret_cast<const void*>(&binary_contiguous_kernel<Op, int64_t>);
  });
  (void)sink;
}
}  // namespace
}  // namespace ignis::cuda

namespace ignis::detail {
void register_cuda_kernels() { (void)&cuda::instantiate_all; }
}  // namespace ignis::detail
