// Tensor::str(): PyTorch's text form (torch/_tensor_str.py with the default print options:
// precision 4, linewidth 80, threshold 1000 elements, 3 edge items), except that dtypes are
// named without the "torch." prefix: `tensor([[ 1.0000, -2.5000],\n        [ 3.0000,  4.0000]])`.
// Reads the values on the host (printing synchronises with the device); never touches kernels.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "ignis/ops.h"

namespace ignis {

namespace {

constexpr int kPrecision = 4;
constexpr int64_t kLineWidth = 80;
constexpr int64_t kThreshold = 1000;  // more elements than this are summarised with "..."
constexpr int64_t kEdgeItems = 3;     // elements kept at each end of a summarised dimension

/// How every element of one tensor is written: the mode and the common width are decided
/// once from all the (shown) values, as PyTorch's _Formatter does.
struct Formatter {
  enum class Kind { Floating, Integer, Bool } kind = Kind::Floating;
  bool int_mode = true;  // floating values that are all integers print as "1."
  bool sci_mode = false;
  size_t width = 1;

  std::string format_unpadded(double v) const {
    if (std::isnan(v)) return "nan";  // whatever its sign bit (fmt writes "-nan"), as PyTorch
    if (sci_mode) return fmt::format("{:.{}e}", v, kPrecision);
    if (int_mode) return fmt::format("{:.0f}", v) + (std::isfinite(v) ? "." : "");
    return fmt::format("{:.{}f}", v, kPrecision);
  }
  std::string format_unpadded(int64_t v) const {
    if (kind == Kind::Bool) return v ? "True" : "False";
    return std::to_string(v);
  }
  template <class V>
  std::string format(V v) const {
    std::string s = format_unpadded(v);
    return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
  }
};

/// The values of a tensor in row-major order on the host, as doubles (floating dtypes, which
/// 16-bit floats and float32 convert to exactly) or int64 (integers and bool).
struct HostValues {
  Shape sizes;
  Shape strides;  // row-major, in elements
  std::vector<double> floats;
  std::vector<int64_t> ints;
  bool summarize = false;

  /// The indices of dimension d that are printed: all, or the first and last kEdgeItems.
  std::vector<int64_t> shown(size_t d) const {
    const int64_t n = sizes[d];
    std::vector<int64_t> idx;
    if (summarize && n > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
      for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }
  /// Calls f(flat index) for every printed element.
  template <class F>
  void for_each_shown(size_t d, int64_t base, const F& f) const {
    if (d == sizes.size()) return f(base);
    for (int64_t i : shown(d)) for_each_shown(d + 1, base + i * strides[d], f);
  }
};

Formatter make_formatter(const HostValues& hv, DType dtype) {
  Formatter fm;
  if (!is_floating(dtype)) {
    fm.kind = dtype == kBool ? Formatter::Kind::Bool : Formatter::Kind::Integer;
    hv.for_each_shown(0, 0, [&](int64_t i) {
      fm.width = std::max(fm.width, fm.format_unpadded(hv.ints[size_t(i)]).size());
    });
    return fm;
  }
  // Only nonzero finite values decide the mode; nan/inf print as they are.
  std::vector<double> vals;
  hv.for_each_shown(0, 0, [&](int64_t i) {
    const double v = hv.floats[size_t(i)];
    if (std::isfinite(v) && v != 0) vals.push_back(v);
  });
  if (vals.empty()) return fm;
  double lo = INFINITY, hi = 0;
  for (double v : vals) {
    lo = std::min(lo, std::fabs(v));
    hi = std::max(hi, std::fabs(v));
    fm.int_mode &= v == std::ceil(v);
  }
  // Scientific notation when fixed notation would hide digits: a wide range of magnitudes,
  // huge values or (for non-integers) tiny ones.
  fm.sci_mode = hi / lo > 1000.0 || hi > 1.0e8 || (!fm.int_mode && lo < 1.0e-4);
  for (double v : vals) {
    size_t w = fm.format_unpadded(v).size();
    fm.width = std::max(fm.width, w);
  }
  return fm;
}

std::string spaces(int64_t n) { return std::string(size_t(std::max<int64_t>(n, 0)), ' '); }

template <class V>
std::string vector_str(const HostValues& hv, const std::vector<V>& vals, const Formatter& fm,
                       int64_t base, int64_t indent) {
  const size_t d = hv.sizes.size() - 1;
  const int64_t n = hv.sizes[d];
  const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / int64_t(fm.width + 2));
  std::vector<std::string> items;
  const bool cut = hv.summarize && n > 2 * kEdgeItems;
  for (int64_t i : hv.shown(d)) {
    if (cut && i == n - kEdgeItems) items.push_back(" ...");
    items.push_back(fm.format(vals[size_t(base + i * hv.strides[d])]));
  }
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i % size_t(per_line) == 0 ? ",\n" + spaces(indent + 1) : ", ";
    out += items[i];
  }
  return out + "]";
}

template <class V>
std::string tensor_str(const HostValues& hv, const std::vector<V>& vals, const Formatter& fm,
                       size_t d, int64_t base, int64_t indent) {
  const size_t ndim = hv.sizes.size();
  if (d + 1 == ndim) return vector_str(hv, vals, fm, base, indent);
  const int64_t n = hv.sizes[d];
  const bool cut = hv.summarize && n > 2 * kEdgeItems;
  std::string sep = ",";  // one blank line fewer per level inward, then the indent
  sep.append(ndim - d - 1, '\n');
  sep.append(size_t(indent + 1), ' ');
  std::string out = "[";
  bool first = true;
  for (int64_t i : hv.shown(d)) {
    if (!first) out += sep;
    if (cut && i == n - kEdgeItems) out.append("...").append(sep);
    out += tensor_str(hv, vals, fm, d + 1, base + i * hv.strides[d], indent + 1);
    first = false;
  }
  return out + "]";
}

/// Appends ", suffix" to the text, or starts a new line when the last line would pass the
/// line width (PyTorch's _add_suffixes, including its off-by-two line length).
std::string add_suffixes(std::string text, const std::vector<std::string>& suffixes,
                         int64_t indent) {
  const size_t nl = text.rfind('\n');
  int64_t last_line = int64_t(text.size()) - (nl == std::string::npos ? -1 : int64_t(nl)) + 1;
  for (const std::string& s : suffixes) {
    if (last_line + int64_t(s.size()) + 2 > kLineWidth) {
      text += ",\n" + spaces(indent) + s;
      last_line = indent + int64_t(s.size());
    } else {
      text += ", " + s;
      last_line += int64_t(s.size()) + 2;
    }
  }
  return text + ")";
}

std::string size_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string Tensor::str() const {
  IGNIS_CHECK(defined(), ValueError, "[str] called on an undefined tensor");
  const std::string prefix = "tensor(";
  const int64_t indent = int64_t(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  const std::string dtype_suffix = std::string("dtype=") + dtype_name(dtype());
  if (numel() == 0) {
    // Nothing shows the shape or the dtype, so both are spelled out (as NumPy does).
    if (dim() != 1) suffixes.push_back("size=" + size_tuple(sizes()));
    if (dtype() != default_dtype()) suffixes.push_back(dtype_suffix);
    return add_suffixes(prefix + "[]", suffixes, indent);
  }
  if (dtype() != default_dtype() && dtype() != kInt64 && dtype() != kBool)
    suffixes.push_back(dtype_suffix);

  HostValues hv;
  hv.sizes = sizes();
  hv.strides.assign(hv.sizes.size(), 1);
  for (int64_t d = int64_t(hv.sizes.size()) - 2; d >= 0; --d)
    hv.strides[size_t(d)] = hv.strides[size_t(d) + 1] * hv.sizes[size_t(d) + 1];
  hv.summarize = numel() > kThreshold;
  if (is_floating(dtype())) hv.floats = to_vector<double>();
  else hv.ints = to_vector<int64_t>();
  const Formatter fm = make_formatter(hv, dtype());

  std::string body;
  if (dim() == 0) {
    body = is_floating(dtype()) ? fm.format(hv.floats[0]) : fm.format(hv.ints[0]);
  } else {
    body = is_floating(dtype()) ? tensor_str(hv, hv.floats, fm, 0, 0, indent)
                                : tensor_str(hv, hv.ints, fm, 0, 0, indent);
  }
  return add_suffixes(prefix + body, suffixes, indent);
}

}  // namespace ignis
