// CPU kernels that move or make values without arithmetic: converting copy, fill, where,
// and the arange/linspace ranges.
#include <cstring>

#include "core/dispatch.h"
#include "core/tensor_impl.h"
#include "cpu/loops.h"
#include "kernels/convert.h"

namespace ignis::cpu {
namespace {
using kernels::convert;

void copy_kernel(const ElementwisePlan& p) {
  visit_dtype(p.dtypes[0], [&]<class D>() {
    visit_dtype(p.dtypes[1], [&]<class S>() {
      const bool stream = use_streaming_stores<D>(p.numel);
      cpu_for_each(p, [&](char* const* d, const int64_t* s, int64_t n) {
        D* o = reinterpret_cast<D*>(d[0]);
        const S* a = reinterpret_cast<const S*>(d[1]);
        if constexpr (std::is_same_v<D, S>) {
          if (s[0] == 1 && s[1] == 1 && !stream) {
            std::memcpy(o, a, size_t(n) * sizeof(D));
            return;
          }
        }
        if (s[0] == 1 && s[1] == 1) {
          write_contiguous(o, n, stream, [&](int64_t i) { return convert<D>(a[i]); });
        } else if (s[0] == 1 && s[1] == 0) {
          // A broadcast source (e.g. the expanded gradient of sum or mean): convert once and
          // fill; the strided loop below does not vectorise and is ~5x slower.
          const D v = convert<D>(a[0]);
          write_contiguous(o, n, stream, [&](int64_t) { return v; });
        } else {
          for (int64_t i = 0; i < n; ++i) o[i * s[0]] = convert<D>(a[i * s[1]]);
        }
      });
    });
  });
}

void fill_kernel(const ElementwisePlan& p, const Scalar& value) {
  visit_dtype(p.dtypes[0], [&]<class T>() {
    T v;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v = T(float(value.to_double()));
    else v = value.to<T>();
    cpu_for_each(p, [&](char* const* d, const int64_t* s, int64_t n) {
      T* o = reinterpret_cast<T*>(d[0]);
      if (s[0] == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = v;
      }
    });
  });
}

void where_kernel(const ElementwisePlan& p) {
  visit_dtype(p.dtypes[0], [&]<class T>() {
    cpu_for_each(p, [&](char* const* d, const int64_t* s, int64_t n) {
      T* o = reinterpret_cast<T*>(d[0]);
      const bool* c = reinterpret_cast<const bool*>(d[1]);
      const T* a = reinterpret_cast<const T*>(d[2]);
      const T* b = reinterpret_cast<const T*>(d[3]);
      // Contiguous runs (b may be a broadcast scalar, as in relu's backward): both values are
      // loaded unconditionally so the select has no branch and vectorises; the general
      // strided loop is branchy and mispredicts on random conditions. The condition is read as
      // bytes: GCC 12 does not vectorise a select on a bool load, but does on uint8_t.
      const uint8_t* c8 = reinterpret_cast<const uint8_t*>(c);
      if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 0) {
        const T bv = b[0];
        for (int64_t i = 0; i < n; ++i) {
          const T av = a[i];
          o[i] = c8[i] != 0 ? av : bv;
        }
      } else if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {
        for (int64_t i = 0; i < n; ++i) {
          const T av = a[i], bv = b[i];
          o[i] = c8[i] != 0 ? av : bv;
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i * s[0]] = c[i * s[1]] ? a[i * s[2]] : b[i * s[3]];
      }
    });
  });
}

void range_kernel(const Tensor& out, double start, double step, std::optional<double> end) {
  const int64_t n = out.numel();
  visit_dtype(out.dtype(), [&]<class T>() {
    T* o = static_cast<T*>(out.data_ptr());
    if (!end) {
      for (int64_t i = 0; i < n; ++i) o[i] = convert<T>(start + double(i) * step);
      return;
    }
    // linspace: the first half counts up from start, the second down from end, so both
    // endpoints are exact (PyTorch's formula).
    if (n == 1) {
      o[0] = convert<T>(start);
      return;
    }
    const int64_t half = n / 2;
    for (int64_t i = 0; i < n; ++i)
      o[i] = convert<T>(i < half ? start + step * double(i) : *end - step * double(n - i - 1));
  });
}
}  // namespace

void register_copy_cpu() {
  detail::copy_kernel.set(DeviceType::CPU, &copy_kernel);
  detail::fill_kernel.set(DeviceType::CPU, &fill_kernel);
  detail::where_kernel.set(DeviceType::CPU, &where_kernel);
  detail::range_kernel.set(DeviceType::CPU, &range_kernel);
}

}  // namespace ignis::cpu
