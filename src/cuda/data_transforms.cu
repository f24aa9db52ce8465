// CUDA kernel of the geometric batch transforms (src/data/transform_kernels.h): crop with
// zero or reflect padding, horizontal flip, cutout, and the fused uint8 -> normalised float32
// conversion, one thread per output value. The per-pixel math is the CPU kernel's
// (src/kernels/sample_geometry.h) and the per-sample windows are drawn on the host by the same
// front ends, so a batch augmented here equals the CPU's bit for bit for the same seed.
//
// The windows and the per-channel mean / std travel in one small pinned buffer copied
// asynchronously on the batch's stream, so augmenting a batch never waits for the GPU.
#include <cstring>
#include <vector>

#include "core/tensor_impl.h"
#include "cuda/launch.cuh"
#include "data/transform_kernels.h"
#include "kernels/sample_geometry.h"

namespace ignis::cuda::detail {
namespace {
using data::detail::GeometryParams;
using data::detail::SampleWindow;

struct GeometryShape {
  int64_t B = 0, C = 0, H = 0, W = 0, h = 0, w = 0;
  bool reflect = false;
};

template <class In, class Out, bool Norm>
__global__ void geometry_kernel(
    int64_t n,
    GeometryShape s,
    const SampleWindow* windows,
    const float* mean,
    const float* std,
    const In* in,
    Out* out) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t x = e % s.w, y = (e / s.w) % s.h, bc = e / (s.w * s.h);
    const int64_t c = bc % s.C, b = bc / s.C;
    const SampleWindow win = windows[b];
    Out v = Out(0);
    const bool cut = y >= win.cut_y0 && y < win.cut_y1 && x >= win.cut_x0 && x < win.cut_x1;
    if (!cut) {
      const int64_t sy = kernels::geometry_source_coord(win.top + y, s.H, s.reflect);
      const int64_t sx =
          kernels::geometry_source_coord(win.left + (win.flip ? s.w - 1 - x : x), s.W, s.reflect);
      if (sy >= 0 && sx >= 0)
        v = kernels::geometry_convert<In, Out, Norm>(
            in[(bc * s.H + sy) * s.W + sx], Norm ? mean[c] : 0.0f, Norm ? std[c] : 1.0f);
    }
    out[e] = v;
  }
}

void sample_geometry(const Tensor& in, Tensor& out, const GeometryParams& p) {
  GeometryShape s;
  s.B = in.size(0), s.C = in.size(1), s.H = in.size(2), s.W = in.size(3);
  s.h = out.size(2), s.w = out.size(3), s.reflect = p.reflect;
  const int64_t n = out.numel();
  if (n == 0) return;
  // [windows][mean][std] in one buffer, copied without blocking the host.
  const size_t win_bytes = p.windows.size() * sizeof(SampleWindow);
  const size_t stats_bytes = p.mean.size() * sizeof(float);
  std::vector<char> blob(win_bytes + 2 * stats_bytes);
  std::memcpy(blob.data(), p.windows.data(), win_bytes);
  if (stats_bytes > 0) {
    std::memcpy(blob.data() + win_bytes, p.mean.data(), stats_bytes);
    std::memcpy(blob.data() + win_bytes + stats_bytes, p.std.data(), stats_bytes);
  }
  Tensor host = ignis::detail::make_tensor({int64_t(blob.size())}, kUInt8, Device::cpu());
  std::memcpy(host.data_ptr(), blob.data(), blob.size());
  const Tensor params = host.pin_memory().to(in.device(), /*non_blocking=*/true);
  const char* base = static_cast<const char*>(params.data_ptr());
  const auto* windows = reinterpret_cast<const SampleWindow*>(base);
  const auto* mean = reinterpret_cast<const float*>(base + win_bytes);
  const auto* std = reinterpret_cast<const float*>(base + win_bytes + stats_bytes);
  LaunchOn on(in.device());
  auto launch = [&]<class In, class Out, bool Norm>() {
    geometry_kernel<In, Out, Norm><<<grid_for(n), kThreads, 0, on.stream>>>(
        n,
        s,
        windows,
        mean,
        std,
        static_cast<const In*>(in.data_ptr()),
        static_cast<Out*>(out.data_ptr()));
  };
  if (p.to_float && !p.mean.empty())
    launch.template operator()<uint8_t, float, true>();
  else if (p.to_float)
    launch.template operator()<uint8_t, float, false>();
  else if (in.dtype() == kUInt8)
    launch.template operator()<uint8_t, uint8_t, false>();
  else
    launch.template operator()<float, float, false>();
  IGNIS_CUDA_CHECK_LAUNCH("sample_geometry");
}

}  // namespace

void register_data_transforms() {
  data::detail::sample_geometry_kernel.set(DeviceType::CUDA, &sample_geometry);
}

}  // namespace ignis::cuda::detail
