// CPU kernel of the geometric batch transforms (src/data/transform_kernels.h). Per sample, the
// source column of every output column is computed once (window, flip, reflection), then each
// output row is a gather from one source row or zeros; samples run in parallel.
#include <cstring>

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

template <class T>
void geometry(const Tensor& in, Tensor& out, const GeometryParams& p) {
  const int64_t B = in.size(0), C = in.size(1), H = in.size(2), W = in.size(3);
  const int64_t h = out.size(2), w = out.size(3);
  const T* src = static_cast<const T*>(in.data_ptr());
  T* dst = static_cast<T*>(out.data_ptr());
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
          for (int64_t c = 0; c < C; ++c) {
            const T* plane = src + (b * C + c) * H * W;
            T* oplane = dst + (b * C + c) * h * w;
            for (int64_t y = 0; y < h; ++y) {
              T* orow = oplane + y * w;
              const int64_t sy = source_coord(win.top + y, H, p.reflect);
              if (sy < 0) {
                std::memset(orow, 0, size_t(w) * sizeof(T));
                continue;
              }
              const T* row = plane + sy * W;
              for (int64_t x = 0; x < w; ++x) {
                const int64_t sx = cols[size_t(x)];
                orow[x] = sx >= 0 ? row[sx] : T(0);
              }
            }
            for (int64_t y = win.cut_y0; y < win.cut_y1; ++y)
              std::memset(
                  oplane + y * w + win.cut_x0, 0, size_t(win.cut_x1 - win.cut_x0) * sizeof(T));
          }
        }
      });
}

void sample_geometry_cpu(const Tensor& in, Tensor& out, const GeometryParams& p) {
  if (in.dtype() == kUInt8)
    geometry<uint8_t>(in, out, p);
  else
    geometry<float>(in, out, p);
}

}  // namespace

void register_data_cpu() {
  data::detail::sample_geometry_kernel.set(DeviceType::CPU, sample_geometry_cpu);
}

}  // namespace ignis::cpu
