// CUDA kernels that move or make values without arithmetic: converting copy (any layout,
// any dtype pair), fill, where, and the arange/linspace ranges (the twin of src/cpu/copy.cpp).
#include <optional>

#include "core/dispatch.h"
#include "cuda/elementwise.cuh"
#include "kernels/convert.h"

namespace ignis::cuda::detail {
namespace {
using kernels::convert;

template <class D, class S>
struct ConvertF {
  __device__ __forceinline__ D operator()(S s) const { return convert<D>(s); }
};

template <class T>
struct FillF {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};

template <class T>
struct WhereF {
  __device__ __forceinline__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

void copy_kernel(const ElementwisePlan& p) {
  visit_dtype(p.dtypes[0], [&]<class D>() {
    visit_dtype(p.dtypes[1], [&]<class S>() { launch_elementwise<D, S>(p, ConvertF<D, S>{}, "copy_"); });
  });
}

void fill_kernel(const ElementwisePlan& p, const Scalar& value) {
  visit_dtype(p.dtypes[0], [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v = T(float(value.to_double()));
    else v = value.to<T>();
    launch_elementwise<T>(p, FillF<T>{v}, "fill_");
  });
}

void where_kernel(const ElementwisePlan& p) {
  visit_dtype(p.dtypes[0], [&]<class T>() { launch_elementwise<T, bool, T, T>(p, WhereF<T>{}, "where"); });
}

template <class T>
__global__ void range_kernel_impl(T* out, int64_t n, double start, double step, bool linspace,
                                  double end) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    // The CPU's formulas (src/cpu/copy.cpp), in double, so both give the same values.
    // Explicitly rounded operations: nvcc would otherwise fuse them into an FMA, which
    // rounds once and can differ from the CPU in the last bit.
    double v;
    if (!linspace) v = __dadd_rn(start, __dmul_rn(double(i), step));
    else if (n == 1) v = start;
    else if (i < n / 2) v = __dadd_rn(start, __dmul_rn(step, double(i)));
    else v = __dsub_rn(end, __dmul_rn(step, double(n - i - 1)));
    out[i] = convert<T>(v);
  }
}

void range_kernel(const Tensor& out, double start, double step, std::optional<double> end) {
  const int64_t n = out.numel();
  if (n == 0) return;
  LaunchOn on(out.device());
  visit_dtype(out.dtype(), [&]<class T>() {
    range_kernel_impl<T><<<grid_for(n), kThreads, 0, on.stream>>>(
        static_cast<T*>(out.data_ptr()), n, start, step, end.has_value(), end.value_or(0.0));
  });
  IGNIS_CUDA_CHECK_LAUNCH("arange");
}
}  // namespace

void register_copy() {
  ignis::detail::copy_kernel.set(DeviceType::CUDA, &copy_kernel);
  ignis::detail::fill_kernel.set(DeviceType::CUDA, &fill_kernel);
  ignis::detail::where_kernel.set(DeviceType::CUDA, &where_kernel);
  ignis::detail::range_kernel.set(DeviceType::CUDA, &range_kernel);
}

}  // namespace ignis::cuda::detail
