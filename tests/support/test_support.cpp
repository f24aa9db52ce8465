// Test helpers: see test_support.h.
#include "support/test_support.h"

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "core/shape.h"

namespace ignis::testing {

std::vector<double> random_values(int64_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(size_t(std::max<int64_t>(n, 0)));
  for (double& x : v) x = dist(rng);
  return v;
}

Tensor random_tensor(const Shape& shape, double lo, double hi, uint64_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return tensor(random_values(n, lo, hi, seed), shape);
}

void expect_gradcheck(const std::string& what,
                      const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& inputs) {
  const std::string report = autograd::gradcheck(fn, inputs);
  EXPECT_TRUE(report.empty()) << what << ":\n" << report;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Strided: return "strided";
    case Layout::Offset: return "offset";
  }
  return "?";
}

Tensor make_input(const std::vector<double>& values, const Shape& shape, DType dtype,
                  Layout layout) {
  return make_input_with_gaps(values, shape, dtype, layout, 0, Device::cpu());
}

Tensor make_input_with_gaps(const std::vector<double>& values, const Shape& shape, DType dtype,
                            Layout layout, double gap, Device device) {
  Tensor base = tensor(values, shape).to(device, dtype);
  const int64_t nd = int64_t(shape.size());
  if (layout == Layout::Transposed && nd < 2) layout = Layout::Strided;
  switch (layout) {
    case Layout::Contiguous: return base;
    case Layout::Transposed: {
      Shape perm(nd);
      for (int64_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
      Tensor stored = base.permute(perm).contiguous();  // reversed-dims storage
      Tensor view = stored.permute(perm);
      EXPECT_TRUE(view.numel() <= 1 || !view.is_contiguous() || shape[0] == 1 ||
                  shape[nd - 1] == 1);
      return view;
    }
    case Layout::Strided: {
      if (nd == 0) return base;
      Shape wide = shape;
      wide.back() *= 2;
      Tensor view = full(wide, gap, {dtype, device}).slice(nd - 1, 0, std::nullopt, 2);
      view.copy_(base);
      return view;
    }
    case Layout::Offset: {
      Tensor view =
          full({base.numel() + 7}, gap, {dtype, device}).narrow(0, 7, base.numel()).view(shape);
      view.copy_(base);
      return view;
    }
  }
  return base;
}

std::vector<Tensor> gradient_like_list(Device device, uint64_t seed) {
  struct Spec {
    Shape shape;
    DType dtype;
    Layout layout;
  };
  std::vector<Spec> specs = {
      {{3 * 65536 + 5}, kFloat32, Layout::Contiguous},
      {{2, 3, 5, 7}, kFloat64, Layout::Transposed},
      {{33, 17}, kBFloat16, Layout::Transposed},
      {{9, 13}, kFloat16, Layout::Strided},
      {{4, 25}, kFloat32, Layout::Offset},
      {{6, 5}, kInt64, Layout::Contiguous},
      {{0, 3}, kFloat32, Layout::Contiguous},
      {{}, kFloat32, Layout::Contiguous},
      {{2, 8, 3, 3}, kFloat32, Layout::Contiguous},  // made channels-last below
  };
  // Small ones, two in three dense: with the four dense float32 tensors above, 36 for the
  // check's kernel, more than the 32 one CUDA launch's table holds.
  constexpr Layout kSmall[] = {Layout::Contiguous, Layout::Offset, Layout::Strided};
  for (int i = 0; i < 48; ++i) specs.push_back({{1 + (i * 37) % 300}, kFloat32, kSmall[i % 3]});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Tensor> list;
  for (const Spec& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    const auto v = random_values(n, -4, 4, seed + list.size());
    list.push_back(make_input_with_gaps(v, s.shape, s.dtype, s.layout, nan, device));
  }
  list[8] = list[8].contiguous(MemoryFormat::channels_last);
  return list;
}

std::vector<double> values_of(const Tensor& t) { return t.to(Device::cpu(), kFloat64).contiguous().to_vector<double>(); }

std::vector<double> round_to(const std::vector<double>& values, DType dtype) {
  return values_of(tensor(values).to(dtype));
}

double default_rtol(DType dtype) {
  switch (dtype) {
    case kFloat64: return 1e-12;
    case kFloat32: return 1e-5;
    case kBFloat16: return 1e-2;
    case kFloat16: return 2e-3;
    default: return 0;
  }
}

::testing::AssertionResult all_close(const std::vector<double>& actual,
                                     const std::vector<double>& expected, double rtol,
                                     double atol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size mismatch: actual " << actual.size() << " vs expected " << expected.size();
  std::ostringstream bad;
  int64_t nbad = 0, worst = -1;
  double worst_excess = 0, max_abs = 0, max_rel = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    bool ok;
    if (std::isnan(e) || std::isnan(a)) ok = std::isnan(e) && std::isnan(a);
    else if (std::isinf(e) || std::isinf(a)) ok = a == e;
    else {
      const double diff = std::fabs(a - e);
      max_abs = std::max(max_abs, diff);
      if (e != 0) max_rel = std::max(max_rel, diff / std::fabs(e));
      const double excess = diff - (atol + rtol * std::fabs(e));
      ok = excess <= 0;
      if (!ok && (worst < 0 || excess > worst_excess)) worst = int64_t(i), worst_excess = excess;
    }
    if (!ok) {
      if (worst < 0) worst = int64_t(i);
      if (nbad < 5) bad << "\n  [" << i << "] actual " << a << " expected " << e;
      ++nbad;
    }
  }
  if (nbad == 0) return ::testing::AssertionSuccess();
  auto f = ::testing::AssertionFailure();
  f << nbad << " of " << actual.size() << " elements differ (rtol " << rtol << ", atol " << atol
    << "; max abs diff " << max_abs << ", max rel diff " << max_rel << ")" << bad.str();
  if (worst >= 0)
    f << "\n  worst at [" << worst << "]: actual " << actual[size_t(worst)] << " expected "
      << expected[size_t(worst)];
  return f;
}

::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     double rtol, double atol) {
  return all_close(values_of(actual), expected, rtol, atol);
}

std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    idx[size_t(d)] = shape[size_t(d)] ? i % shape[size_t(d)] : 0;
    if (shape[size_t(d)]) i /= shape[size_t(d)];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

}  // namespace ignis::testing
