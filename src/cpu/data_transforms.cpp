// CPU kernel of the geometric batch transforms (src/data/transform_kernels.h). Per sample, the
// source column of every output column is computed once (window, flip, reflection), then each
// output row is a gather from one source row or zeros; samples run in parallel. With zero
// padding the in-image columns of a row are one contiguous run (reversed when flipped), copied
// by a plain loop the compiler vectorises; reflection uses the per-column table. The fused
// pipeline (uint8 -> normalised float32) converts in the same pass.
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "data/transform_kernels.h"
#include "ignis/tensor.h"

namespace ignis::cpu {

namespace {

using data::detail::GeometryParams;

/// Source coordinate of padded coordinate i in [0, n), or -1 (zero padding).
int64_t source_coord(int64_t i, int64_t n, bool reflect) {
  if (i >= 0 && i < n) return i;
  if (!reflect) return -1;
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

/// The value an output pixel takes from source value v: itself, or (v / 255 - m) / s in
/// float32 (the unfused ToFloat + Normalize, operation for operation).
template <class In, class Out>
struct Convert {
  float scale_m = 0, s = 1;
  bool to_float = false, normalize = false;
  Out operator()(In v) const {
    if constexpr (std::is_same_v<In, Out>) {
      return v;
    } else {
      const float f = float(v) / 255.0f;
      return normalize ? (f - scale_m) / s : f;
    }
  }
};

template <class In, class Out>
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
        for (int64_t b = b0; b < b1; ++b) {
          const auto& win = p.windows[size_t(b)];
          for (int64_t x = 0; x < w; ++x)
            cols[size_t(x)] = source_coord(win.left + (win.flip ? w - 1 - x : x), W, p.reflect);
          // Zero padding: output columns [x0, x1) read the image, the rest are 0.
          int64_t x0 = 0, x1 = w;
          if (!p.reflect) {
            while (x0 < w && cols[size_t(x0)] < 0) ++x0;
            while (x1 > x0 && cols[size_t(x1 - 1)] < 0) --x1;
          }
          for (int64_t c = 0; c < C; ++c) {
            Convert<In, Out> cv;
            if (!p.mean.empty()) cv.normalize = true, cv.scale_m = p.mean[size_t(c)], cv.s = p.std[size_t(c)];
            const In* plane = src + (b * C + c) * H * W;
            Out* oplane = dst + (b * C + c) * h * w;
            for (int64_t y = 0; y < h; ++y) {
              Out* orow = oplane + y * w;
              const int64_t sy = source_coord(win.top + y, H, p.reflect);
              if (sy < 0) {
                std::memset(orow, 0, size_t(w) * sizeof(Out));
                continue;
              }
              const In* row = plane + sy * W;
              if (p.reflect) {
                for (int64_t x = 0; x < w; ++x) orow[x] = cv(row[cols[size_t(x)]]);
                continue;
              }
              for (int64_t x = 0; x < x0; ++x) orow[x] = Out(0);
              if (x1 > x0) {
                const int64_t first = cols[size_t(x0)];
                if (win.flip) {
                  const In* r = row + first;  // column x reads first - (x - x0)
                  for (int64_t x = x0; x < x1; ++x) orow[x] = cv(r[x0 - x]);
                } else {
                  const In* r = row + first - x0;  // column x reads first + (x - x0)
                  for (int64_t x = x0; x < x1; ++x) orow[x] = cv(r[x]);
                }
              }
              for (int64_t x = x1; x < w; ++x) orow[x] = Out(0);
            }
            for (int64_t y = win.cut_y0; y < win.cut_y1; ++y)
              std::memset(
                  oplane + y * w + win.cut_x0, 0, size_t(win.cut_x1 - win.cut_x0) * sizeof(Out));
          }
        }
      });
}

void sample_geometry_cpu(const Tensor& in, Tensor& out, const GeometryParams& p) {
  if (p.to_float)
    geometry<uint8_t, float>(in, out, p);
  else if (in.dtype() == kUInt8)
    geometry<uint8_t, uint8_t>(in, out, p);
  else
    geometry<float, float>(in, out, p);
}

}  // namespace

void register_data_cpu() {
  data::detail::sample_geometry_kernel.set(DeviceType::CPU, sample_geometry_cpu);
}

}  // namespace ignis::cpu
