// CPU kernel of the geometric batch transforms (src/data/transform_kernels.h). Per sample, the
// source column of every output column is computed once (window, flip, reflection), then each
// output row is a gather from one source row or zeros; samples run in parallel. With zero
// padding the in-image columns of a row are one contiguous run (reversed when flipped), copied
// by a plain loop the compiler vectorises; reflection uses the per-column table. The fused
// pipeline (uint8 -> normalised float32) converts in the same pass.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "data/transform_kernels.h"
#include "ignis/tensor.h"
#include "kernels/sample_geometry.h"

namespace ignis::cpu {

namespace {

using data::detail::GeometryParams;

/// dst[i] = the output value of source value src[i], i < n (kernels::geometry_convert). A
/// plain loop over contiguous data, so it vectorises.
template <class In, class Out, bool Norm>
void convert_run(const In* src, Out* dst, int64_t n, float mean, float std) {
  if constexpr (std::is_same_v<In, Out>) {
    std::memcpy(dst, src, size_t(n) * sizeof(In));
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = kernels::geometry_convert<In, Out, Norm>(src[i], mean, std);
  }
}

template <class In, class Out, bool Norm>
void geometry(const Tensor& in, Tensor& out, const GeometryParams& p) {
  const int64_t B = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const int64_t h = out.size(2), w = out.size(3);
  const In* src = static_cast<const In*>(in.data_ptr());
  Out* dst = static_cast<Out*>(out.data_ptr());
  ignis::detail::parallel_for(
      0,
      B,
      std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C * h * w)),
      [&](int64_t b0, int64_t b1) {
        std::vector<int64_t> cols(static_cast<size_t>(w));
        std::vector<Out> run(static_cast<size_t>(w));  // a flipped row before its reversal
        for (int64_t b = b0; b < b1; ++b) {
          const auto& win = p.windows[size_t(b)];
          for (int64_t x = 0; x < w; ++x)
            cols[size_t(x)] = kernels::geometry_source_coord(
                win.left + (win.flip ? w - 1 - x : x), W, p.reflect);
          // Zero padding: output columns [x0, x1) read the image (one contiguous source run,
          // reversed when flipped), the rest are 0.
          int64_t x0 = 0, x1 = w;
          if (!p.reflect) {
            while (x0 < w && cols[size_t(x0)] < 0) ++x0;
            while (x1 > x0 && cols[size_t(x1 - 1)] < 0) --x1;
          }
          const int64_t n = x1 - x0;
          const int64_t run_start = n > 0 ? cols[size_t(win.flip ? x1 - 1 : x0)] : 0;
          for (int64_t c = 0; c < C; ++c) {
            const float m = Norm ? p.mean[size_t(c)] : 0.0f, sd = Norm ? p.std[size_t(c)] : 1.0f;
            const In* plane = src + (b * C + c) * H * W;
            Out* oplane = dst + (b * C + c) * h * w;
            for (int64_t y = 0; y < h; ++y) {
              Out* orow = oplane + y * w;
              const int64_t sy = kernels::geometry_source_coord(win.top + y, H, p.reflect);
              if (sy < 0) {
                std::memset(orow, 0, size_t(w) * sizeof(Out));
                continue;
              }
              const In* row = plane + sy * W;
              if (p.reflect) {  // per-column table; reflection needs no conversion speed-up
                for (int64_t x = 0; x < w; ++x)
                  convert_run<In, Out, Norm>(row + cols[size_t(x)], orow + x, 1, m, sd);
                continue;
              }
              std::fill(orow, orow + x0, Out(0));
              if (win.flip) {
                convert_run<In, Out, Norm>(row + run_start, run.data(), n, m, sd);
                std::reverse_copy(run.data(), run.data() + n, orow + x0);
              } else {
                convert_run<In, Out, Norm>(row + run_start, orow + x0, n, m, sd);
              }
              std::fill(orow + x1, orow + w, Out(0));
            }
            for (int64_t y = win.cut_y0; y < win.cut_y1; ++y)
              std::memset(
                  oplane + y * w + win.cut_x0, 0, size_t(win.cut_x1 - win.cut_x0) * sizeof(Out));
          }
        }
      });
}

void sample_geometry_cpu(const Tensor& in, Tensor& out, const GeometryParams& p) {
  if (p.to_float && !p.mean.empty())
    geometry<uint8_t, float, true>(in, out, p);
  else if (p.to_float)
    geometry<uint8_t, float, false>(in, out, p);
  else if (in.dtype() == kUInt8)
    geometry<uint8_t, uint8_t, false>(in, out, p);
  else
    geometry<float, float, false>(in, out, p);
}

}  // namespace

void register_data_cpu() {
  data::detail::sample_geometry_kernel.set(DeviceType::CPU, sample_geometry_cpu);
}

}  // namespace ignis::cpu
