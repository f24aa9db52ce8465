// Tests of the indexing and joining family (index_select, gather, scatter*, index_add*,
// masked_*, cat, stack, split, chunk, one_hot, sort, argsort, topk, tril, triu). Every
// expected value comes from a plain loop over float64 copies of the inputs, on random data in
// every memory layout, several dtypes and all dims (negative too); error paths are checked by
// their messages.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

namespace {

constexpr DType kDTypes[] = {kFloat32, kFloat64, kInt64, kBool, kBFloat16};
const double kNaN = std::numeric_limits<double>::quiet_NaN();

/// n random values representable in dtype (bool 0/1, integers in [-50, 50], floats).
std::vector<double> sample(DType dt, int64_t n, uint64_t seed) {
  std::vector<double> v = random_values(n, -50, 50, seed);
  for (double& x : v) {
    if (dt == kBool)
      x = x > 0 ? 1 : 0;
    else if (!is_floating(dt))
      x = std::floor(x);
  }
  return round_to(v, dt);
}

/// n random integers in [lo, hi).
std::vector<double> rand_ints(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::vector<double> v = random_values(n, 0, 1, seed);
  for (double& x : v) x = double(lo + std::min<int64_t>(hi - lo - 1, int64_t(x * double(hi - lo))));
  return v;
}

int64_t numel_of(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<int64_t>());
}

/// Exact comparison (copies and integer arithmetic must be exact).
::testing::AssertionResult same(const Tensor& actual, const std::vector<double>& expected) {
  return all_close(actual, expected, 0, 0);
}

// ---- float64 references ----------------------------------------------------------------------
std::vector<double> gather_ref(const std::vector<double>& x, const Shape& xs,
                               const std::vector<double>& idx, const Shape& is, int64_t d) {
  std::vector<double> out(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    std::vector<int64_t> p = unravel(int64_t(i), is);
    p[size_t(d)] = int64_t(idx[i]);
    out[i] = x[size_t(ravel(p, xs))];
  }
  return out;
}

/// x rounded to dtype as storing it does (float32, bfloat16 round to nearest even).
double round_dt(double x, DType dt) {
  if (dt == kFloat32) return double(float(x));
  if (dt != kBFloat16) return x;
  float f = float(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  std::memcpy(&f, &u, 4);
  return double(f);
}

/// x (shape xs) with x[p with p[d] = idx[p]] (= or +=) alpha * src[p] for p over is, in
/// row-major order (src has shape ss >= is); each sum is rounded to dt as it is stored.
std::vector<double> scatter_ref(std::vector<double> x, const Shape& xs,
                                const std::vector<double>& idx, const Shape& is,
                                const std::vector<double>& src, const Shape& ss, int64_t d,
                                bool add, double alpha = 1, DType dt = kFloat64) {
  for (int64_t i = 0; i < numel_of(is); ++i) {
    std::vector<int64_t> p = unravel(i, is);
    const double v = src[size_t(ravel(p, ss))];
    p[size_t(d)] = int64_t(idx[size_t(i)]);
    double& dst = x[size_t(ravel(p, xs))];
    dst = add ? round_dt(dst + alpha * v, dt) : v;
  }
  return x;
}

/// Tensor of shape s filled from a row-major vector (contiguous, dtype dt).
Tensor from_values(const std::vector<double>& v, const Shape& s, DType dt) {
  return make_input(v, s, dt, Layout::Contiguous);
}

}  // namespace

// ============================== index_select / gather =========================================
TEST(IndexSelect, AllDimsLayoutsDtypes) {
  const Shape xs = {4, 5, 6};
  uint64_t seed = 1;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3})
        for (DType it : {kInt64, kInt32}) {
          const int64_t d = dim < 0 ? dim + 3 : dim;
          const std::vector<double> xv = sample(dt, numel_of(xs), ++seed);
          const std::vector<double> iv = rand_ints(7, 0, xs[size_t(d)], ++seed);
          Tensor x = make_input(xv, xs, dt, layout);
          Tensor out = index_select(x, dim, make_input(iv, {7}, it, layout));
          Shape os = xs;
          os[size_t(d)] = 7;
          // index_select is gather with the 1-D index broadcast along the other dims.
          std::vector<double> full(size_t(numel_of(os)));
          for (size_t i = 0; i < full.size(); ++i)
            full[i] = iv[size_t(unravel(int64_t(i), os)[size_t(d)])];
          ASSERT_EQ(out.sizes(), os);
          ASSERT_EQ(out.dtype(), dt);
          EXPECT_TRUE(out.is_contiguous());
          EXPECT_TRUE(same(out, gather_ref(xv, xs, full, os, d)))
              << dtype_name(dt) << " " << layout_name(layout) << " dim " << dim;
        }
}

TEST(IndexSelect, ScalarEmptyAndZeroDimIndex) {
  Tensor x = from_values({1, 2, 3, 4, 5, 6}, {2, 3}, kFloat32);
  Tensor out = index_select(x, 1, tensor<int64_t>({2}, Shape{}));  // 0-dim index
  EXPECT_EQ(out.sizes(), (Shape{2, 1}));
  EXPECT_TRUE(same(out, {3, 6}));
  Tensor empty_idx = index_select(x, 0, zeros({0}, kInt64));
  EXPECT_EQ(empty_idx.sizes(), (Shape{0, 3}));
  Tensor s = index_select(scalar_tensor(7.5), 0, tensor<int64_t>({0}));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 7.5);
  Tensor from_empty = index_select(zeros({0, 3}), 1, tensor<int64_t>({2, 0}));
  EXPECT_EQ(from_empty.sizes(), (Shape{0, 2}));
}

TEST(Gather, AllDimsLayoutsDtypes) {
  const Shape xs = {4, 5, 6};
  uint64_t seed = 100;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1, -2, -3}) {
        const int64_t d = dim < 0 ? dim + 3 : dim;
        Shape is = {3, 4, 5};  // smaller than x apart from dim, which may be larger
        is[size_t(d)] = 9;
        const std::vector<double> xv = sample(dt, numel_of(xs), ++seed);
        const std::vector<double> iv = rand_ints(numel_of(is), 0, xs[size_t(d)], ++seed);
        Tensor out =
            gather(make_input(xv, xs, dt, layout), dim, make_input(iv, is, kInt64, layout));
        ASSERT_EQ(out.sizes(), is);
        ASSERT_EQ(out.dtype(), dt);
        EXPECT_TRUE(same(out, gather_ref(xv, xs, iv, is, d)))
            << dtype_name(dt) << " " << layout_name(layout) << " dim " << dim;
      }
}

TEST(Gather, BroadcastIndexEmptyAndScalar) {
  const std::vector<double> xv = sample(kFloat64, 20, 7);
  Tensor x = from_values(xv, {4, 5}, kFloat64);
  // An expanded (stride-0) index is read correctly.
  Tensor idx = tensor<int64_t>({3, 0, 1}, Shape{1, 3}).expand({4, 3});
  std::vector<double> iv;
  for (int r = 0; r < 4; ++r) iv.insert(iv.end(), {3, 0, 1});
  EXPECT_TRUE(same(gather(x, 1, idx), gather_ref(xv, {4, 5}, iv, {4, 3}, 1)));
  EXPECT_EQ(gather(x, 1, zeros({4, 0}, kInt64)).sizes(), (Shape{4, 0}));
  EXPECT_EQ(gather(x, 0, zeros({0, 5}, kInt64)).sizes(), (Shape{0, 5}));
  Tensor s = gather(scalar_tensor(2.5), 0, tensor<int64_t>({0}, Shape{}));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 2.5);
}

TEST(Gather, Large) {
  const Shape xs = {1200, 1000}, is = {1100, 1000};  // 1.1M gathered elements
  const std::vector<double> xv = sample(kFloat32, numel_of(xs), 11);
  for (int64_t d : {0, 1}) {
    const std::vector<double> iv = rand_ints(numel_of(is), 0, xs[size_t(d)], 12 + uint64_t(d));
    Tensor out = gather(from_values(xv, xs, kFloat32), d, from_values(iv, is, kInt64));
    EXPECT_TRUE(same(out, gather_ref(xv, xs, iv, is, d))) << "dim " << d;
  }
}

// ============================== scatter / scatter_add / index_add =============================
TEST(Scatter, TensorSourceAllDimsLayoutsDtypes) {
  const Shape xs = {4, 5, 6}, ss = {5, 5, 7};
  uint64_t seed = 200;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3})
        for (bool add : {false, true}) {
          if (add && dt == kBool) continue;
          const int64_t d = dim < 0 ? dim + 3 : dim;
          Shape is = {3, 4, 5};
          is[size_t(d)] = 5;  // repeated destinations along dim
          const std::vector<double> xv = sample(dt, numel_of(xs), ++seed);
          const std::vector<double> sv = sample(dt, numel_of(ss), ++seed);
          const std::vector<double> iv = rand_ints(numel_of(is), 0, xs[size_t(d)], ++seed);
          Tensor x = make_input(xv, xs, dt, layout), src = make_input(sv, ss, dt, layout);
          Tensor index = make_input(iv, is, kInt64, layout);
          Tensor out = add ? scatter_add(x, dim, index, src) : scatter(x, dim, index, src);
          ASSERT_EQ(out.sizes(), xs);
          ASSERT_EQ(out.dtype(), dt);
          const std::vector<double> want = scatter_ref(xv, xs, iv, is, sv, ss, d, add, 1, dt);
          // Sums of inputs up to 50 in magnitude, rounded at every step as stored.
          EXPECT_TRUE(all_close(out, want, default_rtol(dt), 50 * default_rtol(dt)))
              << dtype_name(dt) << " " << layout_name(layout) << " dim " << dim << " add " << add;
          EXPECT_TRUE(same(x, xv)) << "input modified";
        }
}

TEST(Scatter, ScalarValue) {
  const Shape xs = {4, 6}, is = {3, 6};
  const std::vector<double> xv = sample(kInt64, 24, 21), iv = rand_ints(18, 0, 4, 22);
  std::vector<double> ones(18, 1.0);
  // A float value is truncated into an integer tensor, as PyTorch does.
  Tensor out = scatter(from_values(xv, xs, kInt64), 0, from_values(iv, is, kInt64), Scalar(2.75));
  std::vector<double> twos(18, 2.0);
  EXPECT_TRUE(same(out, scatter_ref(xv, xs, iv, is, twos, is, 0, false)));
  Tensor outf = scatter(from_values(xv, xs, kFloat32), -2, from_values(iv, is, kInt64), 2.75);
  std::vector<double> v(18, 2.75);
  EXPECT_TRUE(same(outf, scatter_ref(xv, xs, iv, is, v, is, 0, false)));
  Tensor outb = scatter(zeros(xs, kBool), 0, from_values(iv, is, kInt64), true);
  EXPECT_TRUE(same(outb, scatter_ref(std::vector<double>(24, 0), xs, iv, is, ones, is, 0, false)));
}

TEST(ScatterAdd, RepeatedIndicesAreSummed) {
  // Every source element lands on one of two destinations.
  Tensor x = zeros({2}, kFloat64);
  std::vector<double> iv = rand_ints(1000, 0, 2, 31), sv = sample(kFloat64, 1000, 32);
  Tensor out =
      scatter_add(x, 0, from_values(iv, {1000}, kInt64), from_values(sv, {1000}, kFloat64));
  EXPECT_TRUE(
      all_close(out, scatter_ref({0, 0}, {2}, iv, {1000}, sv, {1000}, 0, true), 1e-12, 1e-9));
  Tensor xi = zeros({3, 2}, kInt64);
  Tensor ones_src = ones({3, 4}, kInt64);
  Tensor idx = tensor<int64_t>({1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0}, Shape{3, 4});
  EXPECT_TRUE(same(scatter_add(xi, 1, idx, ones_src), {1, 3, 4, 0, 2, 2}));
}

TEST(ScatterAdd, Large) {
  // > 1M updates: into a 1-D tensor (few rows, the destination-split path) and along dim 1
  // and dim 0 of a matrix. Integer-valued float64 sums are exact in any order.
  const int64_t n = 1 << 21;
  std::vector<double> sv = rand_ints(n, -8, 8, 41), iv = rand_ints(n, 0, 1000, 42);
  Tensor out = scatter_add(zeros({1000}, kFloat64), 0, from_values(iv, {n}, kInt64),
                           from_values(sv, {n}, kFloat64));
  EXPECT_TRUE(
      same(out, scatter_ref(std::vector<double>(1000, 0), {1000}, iv, {n}, sv, {n}, 0, true)));
  for (int64_t d : {0, 1}) {
    const Shape xs = {700, 800}, is = {1100, 1000};
    Shape isd = is;
    isd[size_t(1 - d)] = xs[size_t(1 - d)];  // fit x apart from dim
    const int64_t m = numel_of(isd);
    std::vector<double> s2 = rand_ints(m, -8, 8, 43), i2 = rand_ints(m, 0, xs[size_t(d)], 44);
    std::vector<double> x2 = rand_ints(numel_of(xs), -8, 8, 45);
    Tensor o2 = scatter_add(from_values(x2, xs, kFloat32), d, from_values(i2, isd, kInt64),
                            from_values(s2, isd, kFloat32));
    EXPECT_TRUE(same(o2, scatter_ref(x2, xs, i2, isd, s2, isd, d, true))) << "dim " << d;
  }
}

TEST(IndexAdd, AllDimsLayoutsDtypesAlpha) {
  const Shape xs = {4, 5, 6};
  uint64_t seed = 300;
  for (DType dt : {kFloat32, kFloat64, kInt64, kBFloat16})
    for (Layout layout : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1})
        for (DType it : {kInt64, kInt32}) {
          const int64_t d = dim < 0 ? dim + 3 : dim;
          Shape ss = xs;
          ss[size_t(d)] = 8;
          const std::vector<double> xv = sample(dt, numel_of(xs), ++seed);
          const std::vector<double> sv = sample(dt, numel_of(ss), ++seed);
          const std::vector<double> iv = rand_ints(8, 0, xs[size_t(d)], ++seed);
          const double alpha = is_floating(dt) ? 1.5 : 3;
          Tensor out =
              index_add(make_input(xv, xs, dt, layout), dim, make_input(iv, {8}, it, layout),
                        make_input(sv, ss, dt, layout), alpha);
          std::vector<double> full(size_t(numel_of(ss)));
          for (size_t i = 0; i < full.size(); ++i)
            full[i] = iv[size_t(unravel(int64_t(i), ss)[size_t(d)])];
          const std::vector<double> want =
              scatter_ref(xv, xs, full, ss, sv, ss, d, true, alpha, dt);
          EXPECT_TRUE(all_close(out, want, default_rtol(dt), 50 * default_rtol(dt)))
              << dtype_name(dt) << " " << layout_name(layout) << " dim " << dim;
        }
}

TEST(IndexAdd, IntegerAlphaIsTruncatedAndLarge) {
  // As PyTorch: a float alpha is converted to the integer dtype (2.5 -> 2).
  Tensor out =
      index_add(zeros({3}, kInt64), 0, tensor<int64_t>({0, 2, 0}), tensor<int64_t>({1, 2, 3}), 2.5);
  EXPECT_TRUE(same(out, {8, 0, 4}));
  // 2M rows added into 64 rows of width 16 (index_add as an embedding gradient).
  const int64_t n = 1 << 17, w = 16;
  std::vector<double> iv = rand_ints(n, 0, 64, 51), sv = rand_ints(n * w, -4, 4, 52);
  Tensor big = index_add(zeros({64, w}, kFloat64), 0, from_values(iv, {n}, kInt64),
                         from_values(sv, {n, w}, kFloat64));
  std::vector<double> full(size_t(n * w));
  for (int64_t i = 0; i < n * w; ++i) full[size_t(i)] = iv[size_t(i / w)];
  EXPECT_TRUE(same(big, scatter_ref(std::vector<double>(64 * w, 0), {64, w}, full, {n, w}, sv,
                                    {n, w}, 0, true)));
}

TEST(IndexAdd, EmptyIndexAndZeroDim) {
  Tensor x = from_values({1, 2, 3}, {3}, kFloat32);
  EXPECT_TRUE(same(index_add(x, 0, zeros({0}, kInt64), zeros({0})), {1, 2, 3}));
  Tensor s = index_add(scalar_tensor(1.0, kFloat64), 0, tensor<int64_t>({0}),
                       scalar_tensor(2.0, kFloat64));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 3.0);
  EXPECT_TRUE(same(scatter(x, 0, zeros({0}, kInt64), zeros({0})), {1, 2, 3}));
}

TEST(InPlace, WritesThroughNonContiguousViews) {
  const Shape xs = {5, 6};
  uint64_t seed = 400;
  for (Layout layout : kAllLayouts) {
    const std::vector<double> xv = sample(kFloat64, 30, ++seed), sv = sample(kFloat64, 30, ++seed);
    const std::vector<double> iv = rand_ints(24, 0, 6, ++seed), jv = rand_ints(4, 0, 5, ++seed);
    Tensor x = make_input(xv, xs, kFloat64, layout);
    Tensor& r = scatter_(x, 1, make_input(iv, {4, 6}, kInt64, layout),
                         make_input(sv, xs, kFloat64, layout));
    EXPECT_EQ(&r, &x);
    std::vector<double> want = scatter_ref(xv, xs, iv, {4, 6}, sv, xs, 1, false);
    EXPECT_TRUE(same(x, want)) << layout_name(layout);
    scatter_add_(x, 1, make_input(iv, {4, 6}, kInt64, layout),
                 make_input(sv, xs, kFloat64, layout));
    want = scatter_ref(want, xs, iv, {4, 6}, sv, xs, 1, true);
    EXPECT_TRUE(all_close(x, want, 1e-12, 1e-12)) << layout_name(layout);
    std::vector<double> sub(sv.begin(), sv.begin() + 24);
    index_add_(x, 0, make_input(jv, {4}, kInt64, layout), make_input(sub, {4, 6}, kFloat64, layout),
               -2);
    std::vector<double> full(24);
    for (int64_t i = 0; i < 24; ++i) full[size_t(i)] = jv[size_t(i / 6)];
    want = scatter_ref(want, xs, full, {4, 6}, sub, {4, 6}, 0, true, -2);
    EXPECT_TRUE(all_close(x, want, 1e-12, 1e-12)) << layout_name(layout);
  }
}

// ============================== masked_fill / masked_select ====================================
TEST(MaskedFill, BroadcastMasksLayoutsDtypes) {
  const Shape xs = {4, 5, 6};
  uint64_t seed = 500;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (const Shape& ms : {Shape{4, 5, 6}, Shape{5, 1}, Shape{6}, Shape{4, 1, 6}}) {
        const std::vector<double> xv = sample(dt, numel_of(xs), ++seed);
        const std::vector<double> mv = rand_ints(numel_of(ms), 0, 2, ++seed);
        Tensor x = make_input(xv, xs, dt, layout);
        Tensor mask = make_input(mv, ms, kBool, layout);
        const double value = dt == kBool ? 1 : 7;
        std::vector<double> want = xv;
        for (int64_t i = 0; i < numel_of(xs); ++i) {
          std::vector<int64_t> p = unravel(i, xs);
          std::vector<int64_t> q(p.end() - int64_t(ms.size()), p.end());
          for (size_t k = 0; k < q.size(); ++k)
            if (ms[k] == 1) q[k] = 0;
          if (mv[size_t(ravel(q, ms))] != 0) want[size_t(i)] = value;
        }
        Tensor out = masked_fill(x, mask, value);
        ASSERT_EQ(out.dtype(), dt);
        EXPECT_TRUE(same(out, want)) << dtype_name(dt) << " " << layout_name(layout);
        masked_fill_(x, mask, value);
        EXPECT_TRUE(same(x, want)) << dtype_name(dt) << " " << layout_name(layout) << " in place";
      }
}

TEST(MaskedFill, ValueConversionAndOutOfPlaceBroadcast) {
  // As PyTorch 1.13: a float value fills an integer tensor truncated, any number fills bool.
  Tensor x = tensor<int64_t>({1, 2, 3});
  Tensor m = tensor<bool>({true, false, true});
  EXPECT_TRUE(same(masked_fill(x, m, 2.5), {2, 2, 2}));
  EXPECT_TRUE(same(masked_fill(zeros({3}, kBool), m, 2), {1, 0, 1}));
  EXPECT_TRUE(same(x.masked_fill(m, -1), {-1, 2, -1}));
  // Out of place, x broadcasts to the mask's shape as well.
  Tensor wide =
      masked_fill(x, tensor<bool>({true, false, false, false, false, true}, Shape{2, 3}), 0);
  EXPECT_EQ(wide.sizes(), (Shape{2, 3}));
  EXPECT_TRUE(same(wide, {0, 2, 3, 1, 2, 0}));
  EXPECT_EQ(masked_fill(zeros({0, 3}), tensor<bool>({true, false, true}), 1).sizes(),
            (Shape{0, 3}));
}

TEST(MaskedSelect, BroadcastLayoutsAndLarge) {
  uint64_t seed = 600;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts) {
      const Shape xs = {4, 1, 6}, ms = {5, 6};  // broadcast together to [4, 5, 6]
      const std::vector<double> xv = sample(dt, numel_of(xs), ++seed);
      const std::vector<double> mv = rand_ints(numel_of(ms), 0, 2, ++seed);
      std::vector<double> want;
      for (int64_t a = 0; a < 4; ++a)
        for (int64_t b = 0; b < 5; ++b)
          for (int64_t c = 0; c < 6; ++c)
            if (mv[size_t(b * 6 + c)] != 0) want.push_back(xv[size_t(a * 6 + c)]);
      Tensor out = masked_select(make_input(xv, xs, dt, layout), make_input(mv, ms, kBool, layout));
      ASSERT_EQ(out.dim(), 1);
      EXPECT_TRUE(same(out, want)) << dtype_name(dt) << " " << layout_name(layout);
    }
  EXPECT_EQ(masked_select(zeros({3, 0}), zeros({3, 0}, kBool)).sizes(), (Shape{0}));
  EXPECT_EQ(masked_select(ones({4}), zeros({4}, kBool)).sizes(), (Shape{0}));
  const int64_t n = 3 << 19;
  const std::vector<double> xv = rand_ints(n, -100, 100, 61), mv = rand_ints(n, 0, 2, 62);
  std::vector<double> want;
  for (int64_t i = 0; i < n; ++i)
    if (mv[size_t(i)] != 0) want.push_back(xv[size_t(i)]);
  EXPECT_TRUE(same(masked_select(from_values(xv, {n}, kInt64), from_values(mv, {n}, kBool)), want));
}

// ============================== cat / stack ===================================================
TEST(Cat, AllDimsLayoutsAndDtypes) {
  uint64_t seed = 700;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1, -2}) {
        const int64_t d = dim < 0 ? dim + 3 : dim;
        std::vector<Shape> shapes = {{3, 4, 5}, {3, 4, 5}, {3, 4, 5}};
        shapes[1][size_t(d)] = 2;
        shapes[2][size_t(d)] = 0;  // empty along dim, still takes part
        std::vector<std::vector<double>> vals;
        std::vector<Tensor> ins;
        for (const Shape& s : shapes) {
          vals.push_back(sample(dt, numel_of(s), ++seed));
          ins.push_back(make_input(vals.back(), s, dt, layout));
        }
        ins.push_back(ins[0]);
        vals.push_back(vals[0]), shapes.push_back(shapes[0]);
        Tensor out = cat(ins, dim);
        Shape os = shapes[0];
        os[size_t(d)] = 2 * shapes[0][size_t(d)] + 2;
        ASSERT_EQ(out.sizes(), os);
        std::vector<double> want(size_t(numel_of(os)));
        for (int64_t i = 0; i < numel_of(os); ++i) {
          std::vector<int64_t> p = unravel(i, os);
          size_t k = 0;
          while (p[size_t(d)] >= shapes[k][size_t(d)]) p[size_t(d)] -= shapes[k++][size_t(d)];
          want[size_t(i)] = vals[k][size_t(ravel(p, shapes[k]))];
        }
        EXPECT_TRUE(same(out, want))
            << dtype_name(dt) << " " << layout_name(layout) << " dim " << dim;
      }
}

TEST(Cat, TypePromotionAndLegacyEmpty) {
  Tensor i64 = tensor<int64_t>({1, 2, 3, 4}, Shape{2, 2});
  Tensor f32 = from_values({0.5, 1.5}, {1, 2}, kFloat32);
  Tensor out = cat({i64, f32});
  EXPECT_EQ(out.dtype(), kFloat32);
  EXPECT_TRUE(same(out, {1, 2, 3, 4, 0.5, 1.5}));
  EXPECT_EQ(cat({from_values({1, 0}, {2}, kBool), tensor<int32_t>({7})}).dtype(), kInt32);
  EXPECT_EQ(cat({from_values({1, 0}, {2}, kBFloat16), from_values({3}, {1}, kFloat16)}).dtype(),
            kFloat32);
  // 1-D tensors of shape [0] are skipped whatever the other shapes (but still promote).
  Tensor skipped = cat({i64, zeros({0}, kFloat64), i64}, 1);
  EXPECT_EQ(skipped.dtype(), kFloat64);
  EXPECT_EQ(skipped.sizes(), (Shape{2, 4}));
  EXPECT_TRUE(same(skipped, {1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(cat({zeros({0}), zeros({0}, kInt64)}).sizes(), (Shape{0}));
  EXPECT_EQ(cat({i64, zeros({0, 2}, kInt64)}).sizes(), (Shape{2, 2}));
  // Large, to cover the threaded copies.
  const std::vector<double> a = rand_ints(600000, -9, 9, 71), b = rand_ints(600000, -9, 9, 72);
  Tensor big = cat({from_values(a, {600, 1000}, kInt32), from_values(b, {600, 1000}, kInt32)}, 1);
  std::vector<double> want;
  for (int64_t r = 0; r < 600; ++r) {
    want.insert(want.end(), a.begin() + r * 1000, a.begin() + (r + 1) * 1000);
    want.insert(want.end(), b.begin() + r * 1000, b.begin() + (r + 1) * 1000);
  }
  EXPECT_TRUE(same(big, want));
}

TEST(Stack, AllDimsAndPromotion) {
  uint64_t seed = 800;
  for (Layout layout : kAllLayouts)
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const Shape s = {3, 4};
      const std::vector<double> a = sample(kFloat32, 12, ++seed), b = sample(kInt64, 12, ++seed);
      Tensor out =
          stack({make_input(a, s, kFloat32, layout), make_input(b, s, kInt64, layout)}, dim);
      EXPECT_EQ(out.dtype(), kFloat32);
      const int64_t d = dim < 0 ? dim + 3 : dim;
      Shape os = s;
      os.insert(os.begin() + d, 2);
      ASSERT_EQ(out.sizes(), os);
      std::vector<double> want(24);
      for (int64_t i = 0; i < 24; ++i) {
        std::vector<int64_t> p = unravel(i, os);
        const int64_t which = p[size_t(d)];
        p.erase(p.begin() + d);
        want[size_t(i)] = (which == 0 ? a : b)[size_t(ravel(p, s))];
      }
      EXPECT_TRUE(same(out, want)) << layout_name(layout) << " dim " << dim;
    }
  Tensor scalars = stack({scalar_tensor(1), scalar_tensor(2)});
  EXPECT_EQ(scalars.sizes(), (Shape{2}));
  EXPECT_TRUE(same(scalars, {1, 2}));
}

// ============================== split / chunk =================================================
TEST(Split, SizesAndViews) {
  const std::vector<double> xv = sample(kFloat32, 4 * 10, 91);
  for (Layout layout : kAllLayouts) {
    Tensor x = make_input(xv, {4, 10}, kFloat32, layout);
    std::vector<Tensor> parts = split(x, 3, -1);
    ASSERT_EQ(parts.size(), 4u);
    int64_t start = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t len = i < 3 ? 3 : 1;
      EXPECT_EQ(parts[i].sizes(), (Shape{4, len}));
      EXPECT_TRUE(parts[i].is_same_storage(x));
      std::vector<double> want;
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t c = start; c < start + len; ++c) want.push_back(xv[size_t(r * 10 + c)]);
      EXPECT_TRUE(same(parts[i], want)) << layout_name(layout);
      start += len;
    }
    parts[1].fill_(9);  // a view: writes show in x
    EXPECT_EQ(x.select(0, 2).select(0, 4).item<double>(), 9.0);
  }
  Tensor y = from_values(sample(kFloat64, 10, 92), {10}, kFloat64);
  std::vector<Tensor> ws = split(y, Shape{3, 0, 7});
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(ws[0].sizes(), (Shape{3}));
  EXPECT_EQ(ws[1].sizes(), (Shape{0}));
  EXPECT_EQ(ws[2].sizes(), (Shape{7}));
  const std::vector<double> yv = values_of(y);
  EXPECT_TRUE(same(ws[2], std::vector<double>(yv.begin() + 3, yv.end())));
  EXPECT_EQ(split(y, 20).size(), 1u);
  EXPECT_EQ(split(zeros({0}), 3).size(), 1u);
  EXPECT_EQ(split(zeros({0}), 0).size(), 1u);
}

TEST(Chunk, PyTorchSizeRule) {
  auto sizes_of = [](const std::vector<Tensor>& ts, int64_t d) {
    Shape s;
    for (const Tensor& t : ts) s.push_back(t.size(d));
    return s;
  };
  Tensor x = zeros({3, 10});
  EXPECT_EQ(sizes_of(chunk(x, 4, 1), 1), (Shape{3, 3, 3, 1}));
  EXPECT_EQ(sizes_of(chunk(zeros({6}), 4), 0), (Shape{2, 2, 2}));  // fewer chunks than asked
  EXPECT_EQ(sizes_of(chunk(zeros({5}), 4), 0), (Shape{2, 2, 1}));
  EXPECT_EQ(sizes_of(chunk(zeros({2}), 5), 0), (Shape{1, 1}));
  EXPECT_EQ(sizes_of(chunk(zeros({3, 0}), 4, -1), 1), (Shape{0, 0, 0, 0}));
  const std::vector<double> xv = sample(kInt64, 30, 93);
  Tensor t = make_input(xv, {3, 10}, kInt64, Layout::Transposed);
  std::vector<Tensor> cs = chunk(t, 2, 0);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_TRUE(cs[1].is_same_storage(t));
  EXPECT_TRUE(same(cs[1], std::vector<double>(xv.begin() + 20, xv.end())));
}

// ============================== one_hot =======================================================
TEST(OneHot, InferredAndGivenClasses) {
  for (Layout layout : kAllLayouts) {
    const std::vector<double> iv = rand_ints(12, 0, 5, 101);
    Tensor x = make_input(iv, {3, 4}, kInt64, layout);
    const int64_t inferred = int64_t(*std::max_element(iv.begin(), iv.end())) + 1;
    for (int64_t c : {int64_t(-1), int64_t(5), int64_t(8)}) {
      Tensor out = one_hot(x, c);
      const int64_t nc = c < 0 ? inferred : c;
      ASSERT_EQ(out.sizes(), (Shape{3, 4, nc}));
      EXPECT_EQ(out.dtype(), kInt64);
      std::vector<double> want(size_t(12 * nc), 0);
      for (int64_t i = 0; i < 12; ++i) want[size_t(i * nc + int64_t(iv[size_t(i)]))] = 1;
      EXPECT_TRUE(same(out, want)) << layout_name(layout) << " classes " << c;
    }
  }
  EXPECT_TRUE(same(one_hot(tensor<int64_t>({2}, Shape{}), 3), {0, 0, 1}));
  EXPECT_EQ(one_hot(zeros({0}, kInt64), 3).sizes(), (Shape{0, 3}));
}

// ============================== sort / argsort / topk =========================================
namespace {
/// Row-by-row stable reference order along dim d of x (shape s): NaN largest.
std::vector<std::vector<int64_t>> ref_order(const std::vector<double>& x, const Shape& s, int64_t d,
                                            bool descending) {
  std::vector<std::vector<int64_t>> rows;
  const int64_t n = s[size_t(d)];
  for (int64_t i = 0; i < numel_of(s); ++i) {
    std::vector<int64_t> p = unravel(i, s);
    if (p[size_t(d)] != 0) continue;
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto val = [&](int64_t j) {
      p[size_t(d)] = j;
      return x[size_t(ravel(p, s))];
    };
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) v[size_t(j)] = val(j);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double va = v[size_t(a)], vb = v[size_t(b)];
      if (descending) return !std::isnan(vb) && (std::isnan(va) || va > vb);
      return !std::isnan(va) && (std::isnan(vb) || va < vb);
    });
    rows.push_back(order);
  }
  return rows;
}

/// Lays out per-row results (k per row) along dim d of an output of shape os.
std::vector<double> place(const std::vector<std::vector<double>>& rows, const Shape& os,
                          int64_t d) {
  std::vector<double> out(size_t(numel_of(os)));
  size_t r = 0;
  for (int64_t i = 0; i < numel_of(os); ++i) {
    std::vector<int64_t> p = unravel(i, os);
    if (p[size_t(d)] != 0) continue;
    for (int64_t j = 0; j < os[size_t(d)]; ++j) {
      p[size_t(d)] = j;
      out[size_t(ravel(p, os))] = rows[r][size_t(j)];
    }
    ++r;
  }
  return out;
}

/// Expected (values, indices) of the first k of every row in the reference order.
std::pair<std::vector<double>, std::vector<double>> ref_first_k(const std::vector<double>& x,
                                                                const Shape& s, int64_t d,
                                                                bool descending, int64_t k) {
  std::vector<std::vector<double>> idxs;
  for (const std::vector<int64_t>& order : ref_order(x, s, d, descending))
    idxs.emplace_back(order.begin(), order.begin() + k);
  // Values follow from the indices.
  Shape os = s;
  os[size_t(d)] = k;
  std::vector<double> iv = place(idxs, os, d), vv(iv.size());
  for (size_t i = 0; i < iv.size(); ++i) {
    std::vector<int64_t> p = unravel(int64_t(i), os);
    p[size_t(d)] = int64_t(iv[i]);
    vv[i] = x[size_t(ravel(p, s))];
  }
  return {vv, iv};
}

/// Random values with many ties (and NaNs for floating dtypes).
std::vector<double> tie_values(DType dt, int64_t n, uint64_t seed) {
  std::vector<double> v = rand_ints(n, -4, 5, seed);
  if (dt == kBool)
    for (double& x : v) x = x > 0;
  if (is_floating(dt)) {
    const std::vector<double> u = random_values(n, 0, 1, seed + 1);
    for (int64_t i = 0; i < n; ++i) {
      if (u[size_t(i)] < 0.1)
        v[size_t(i)] = kNaN;
      else if (u[size_t(i)] < 0.2)
        v[size_t(i)] = u[size_t(i)] < 0.15 ? -0.0 : 0.0;
      else if (u[size_t(i)] > 0.95)
        v[size_t(i)] = u[size_t(i)] > 0.975 ? INFINITY : -INFINITY;
    }
  }
  return v;
}
}  // namespace

TEST(Sort, StableWithTiesNaNsAllDimsLayoutsDtypes) {
  const Shape xs = {5, 6, 7};
  uint64_t seed = 1000;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (int64_t dim : {0, 1, 2, -1})
        for (bool descending : {false, true}) {
          const int64_t d = dim < 0 ? dim + 3 : dim;
          const std::vector<double> xv = tie_values(dt, numel_of(xs), ++seed);
          Tensor x = make_input(xv, xs, dt, layout);
          auto [values, indices] = sort(x, dim, descending, /*stable=*/true);
          auto [wv, wi] = ref_first_k(xv, xs, d, descending, xs[size_t(d)]);
          ASSERT_EQ(values.dtype(), dt);
          ASSERT_EQ(indices.dtype(), kInt64);
          EXPECT_TRUE(same(indices, wi))
              << dtype_name(dt) << " " << layout_name(layout) << " dim " << dim;
          EXPECT_TRUE(same(values, wv));
          EXPECT_TRUE(same(argsort(x, dim, descending, true), wi));
          // Non-stable sort must still order the values the same way.
          EXPECT_TRUE(same(std::get<0>(sort(x, dim, descending, false)), wv));
        }
}

TEST(Sort, NaNOrderScalarEmptyAndLarge) {
  Tensor x = from_values({3, kNaN, 1, kNaN, 2, INFINITY, -INFINITY}, {7}, kFloat32);
  auto [v, i] = sort(x);
  EXPECT_TRUE(same(v, {-INFINITY, 1, 2, 3, INFINITY, kNaN, kNaN}));
  EXPECT_TRUE(same(i, {6, 2, 4, 0, 5, 1, 3}));
  auto [dv, di] = sort(x, 0, true);
  EXPECT_TRUE(same(dv, {kNaN, kNaN, INFINITY, 3, 2, 1, -INFINITY}));
  EXPECT_TRUE(same(di, {1, 3, 5, 0, 4, 2, 6}));
  auto [sv, si] = sort(scalar_tensor(4.0));
  EXPECT_EQ(sv.dim(), 0);
  EXPECT_EQ(si.item<int64_t>(), 0);
  EXPECT_EQ(std::get<0>(sort(zeros({3, 0}))).sizes(), (Shape{3, 0}));
  const int64_t n = 1 << 20;
  const std::vector<double> big = random_values(n, -1, 1, 1101);
  for (const Shape& s : {Shape{n}, Shape{1024, 1024}}) {
    auto [bv, bi] = sort(from_values(big, s, kFloat64), -1);
    auto [wv, wi] = ref_first_k(big, s, int64_t(s.size()) - 1, false, s.back());
    EXPECT_TRUE(same(bv, wv));
    EXPECT_TRUE(same(bi, wi));
  }
}

TEST(Topk, LargestSmallestAllDimsLayoutsDtypes) {
  const Shape xs = {5, 6, 40};
  uint64_t seed = 1200;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (int64_t dim : {0, 2, -1, -2})
        for (bool largest : {true, false}) {
          const int64_t d = dim < 0 ? dim + 3 : dim;
          const std::vector<double> xv = tie_values(dt, numel_of(xs), ++seed);
          Tensor x = make_input(xv, xs, dt, layout);
          for (int64_t k : {int64_t(0), int64_t(1), int64_t(3), xs[size_t(d)] - 1, xs[size_t(d)]}) {
            auto [values, indices] = topk(x, k, dim, largest);
            auto [wv, wi] = ref_first_k(xv, xs, d, largest, k);
            Shape os = xs;
            os[size_t(d)] = k;
            ASSERT_EQ(values.sizes(), os);
            EXPECT_TRUE(same(values, wv))
                << dtype_name(dt) << " " << layout_name(layout) << " k " << k;
            // Among equal values the lower index comes first.
            EXPECT_TRUE(same(indices, wi))
                << dtype_name(dt) << " " << layout_name(layout) << " k " << k;
          }
        }
}

TEST(Topk, NaNIsLargestAndScalar) {
  Tensor x = from_values({3, kNaN, 1, kNaN, 2, INFINITY, -INFINITY}, {7}, kFloat64);
  auto [v, i] = topk(x, 3);
  EXPECT_TRUE(same(v, {kNaN, kNaN, INFINITY}));
  EXPECT_TRUE(same(i, {1, 3, 5}));
  auto [sv, si] = topk(x, 3, 0, /*largest=*/false);
  EXPECT_TRUE(same(sv, {-INFINITY, 1, 2}));
  EXPECT_TRUE(same(si, {6, 2, 4}));
  auto [zv, zi] = topk(scalar_tensor(3.0), 1);
  EXPECT_EQ(zv.dim(), 0);
  EXPECT_EQ(zv.item<double>(), 3.0);
  EXPECT_EQ(std::get<0>(topk(zeros({2, 0}), 0)).sizes(), (Shape{2, 0}));
}

// ============================== tril / triu ===================================================
TEST(Trilu, BatchesNonSquareDiagonals) {
  uint64_t seed = 1300;
  for (DType dt : kDTypes)
    for (Layout layout : kAllLayouts)
      for (const Shape& s : {Shape{3, 4}, Shape{5, 3}, Shape{2, 3, 4, 5}, Shape{2, 0, 3}})
        for (int64_t diag : {-6, -2, -1, 0, 1, 3, 7}) {
          const std::vector<double> xv = sample(dt, numel_of(s), ++seed);
          Tensor x = make_input(xv, s, dt, layout);
          std::vector<double> lo(xv.size()), up(xv.size());
          for (int64_t i = 0; i < numel_of(s); ++i) {
            std::vector<int64_t> p = unravel(i, s);
            const int64_t r = p[p.size() - 2], c = p.back();
            lo[size_t(i)] = c - r <= diag ? xv[size_t(i)] : 0;
            up[size_t(i)] = c - r >= diag ? xv[size_t(i)] : 0;
          }
          EXPECT_TRUE(same(tril(x, diag), lo))
              << dtype_name(dt) << " " << layout_name(layout) << " " << diag;
          EXPECT_TRUE(same(triu(x, diag), up))
              << dtype_name(dt) << " " << layout_name(layout) << " " << diag;
        }
}

// ============================== errors ========================================================
TEST(IndexErrors, OutOfRangeAndNegativeIndices) {
  Tensor x = zeros({3, 10});
  Tensor idx = tensor<int64_t>({1, 12, 3, -1}, Shape{2, 2});
  EXPECT_THROW_MSG(gather(x, 1, idx), IndexError,
                   "[gather] index 12 is out of bounds for dimension 1 with size 10");
  EXPECT_THROW_MSG(gather(x, 1, tensor<int64_t>({-1}, Shape{1, 1})), IndexError,
                   "[gather] index -1 is out of bounds for dimension 1 with size 10");
  EXPECT_THROW_MSG(index_select(x, 0, tensor<int64_t>({0, 3})), IndexError,
                   "[index_select] index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_THROW_MSG(index_select(x, -1, tensor<int32_t>({-2})), IndexError,
                   "[index_select] index -2 is out of bounds for dimension 1 with size 10");
  EXPECT_THROW_MSG(scatter(x, 1, idx, ones({2, 2})), IndexError,
                   "[scatter] index 12 is out of bounds for dimension 1 with size 10");
  EXPECT_THROW_MSG(scatter(x, 0, tensor<int64_t>({-1}, Shape{1, 1}), 1.0), IndexError,
                   "[scatter] index -1 is out of bounds for dimension 0 with size 3");
  EXPECT_THROW_MSG(scatter_add(x, 0, tensor<int64_t>({0, 5}, Shape{1, 2}), ones({1, 2})),
                   IndexError,
                   "[scatter_add] index 5 is out of bounds for dimension 0 with size 3");
  EXPECT_THROW_MSG(index_add(x, 0, tensor<int64_t>({-1}), ones({1, 10})), IndexError,
                   "[index_add] index -1 is out of bounds for dimension 0 with size 3");
  // Indices are checked before any write: a bad index late in the list leaves x untouched.
  Tensor y = zeros({4});
  std::vector<int64_t> many(5000, 1);
  many.back() = 4;
  EXPECT_THROW_MSG(scatter_(y, 0, tensor(many), ones({5000})), IndexError,
                   "[scatter_] index 4 is out of bounds for dimension 0 with size 4");
  EXPECT_THROW_MSG(index_add_(y, 0, tensor(many), ones({5000})), IndexError,
                   "[index_add_] index 4");
  EXPECT_THROW_MSG(scatter_add_(y, 0, tensor(many), ones({5000})), IndexError,
                   "[scatter_add_] index 4");
  EXPECT_TRUE(same(y, {0, 0, 0, 0}));
  EXPECT_THROW_MSG(gather(zeros({2, 0}), 1, zeros({2, 1}, kInt64)), IndexError,
                   "index 0 is out of bounds for dimension 1 with size 0");
  EXPECT_THROW_MSG(gather(x, 2, idx), IndexError, "[gather]");
}

TEST(IndexErrors, IndexDtypes) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW_MSG(gather(x, 0, zeros({1, 1})), DTypeError,
                   "[gather] expected an int64 index, got float32");
  EXPECT_THROW_MSG(gather(x, 0, zeros({1, 1}, kInt32)), DTypeError,
                   "[gather] expected an int64 index, got int32");
  EXPECT_THROW_MSG(scatter(x, 0, zeros({1, 1}, kInt32), zeros({1, 1})), DTypeError,
                   "[scatter] expected an int64 index, got int32");
  EXPECT_THROW_MSG(index_select(x, 0, zeros({1}, kBool)), DTypeError,
                   "[index_select] expected an int64 or int32 index, got bool");
  EXPECT_THROW_MSG(index_add(x, 0, zeros({1}), zeros({1, 4})), DTypeError,
                   "[index_add] expected an int64 or int32 index, got float32");
  EXPECT_THROW_MSG(one_hot(zeros({3}, kInt32)), DTypeError, "[one_hot] expected an int64 tensor");
  // src must have x's dtype (as PyTorch).
  EXPECT_THROW_MSG(scatter(x, 0, zeros({1, 1}, kInt64), zeros({1, 1}, kFloat64)), DTypeError,
                   "[scatter] src must have the dtype of x (float32), got float64");
  EXPECT_THROW_MSG(scatter_add(x, 0, zeros({1, 1}, kInt64), zeros({1, 1}, kInt64)), DTypeError,
                   "[scatter_add] src must have the dtype of x");
  EXPECT_THROW_MSG(index_add(x, 0, zeros({1}, kInt64), zeros({1, 4}, kInt64)), DTypeError,
                   "[index_add] src must have the dtype of x (float32), got int64");
}

TEST(IndexErrors, Shapes) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW_MSG(gather(x, 0, zeros({2}, kInt64)), ShapeError,
                   "[gather] index must have as many dimensions as x: got index of shape [2] for x "
                   "of shape [3, 4]");
  EXPECT_THROW_MSG(
      gather(x, 0, zeros({2, 5}, kInt64)), ShapeError,
      "[gather] index of shape [2, 5] is larger than x of shape [3, 4] in dimension 1");
  EXPECT_THROW_MSG(
      scatter(x, 0, zeros({2, 3}, kInt64), zeros({2, 2})), ShapeError,
      "[scatter] index of shape [2, 3] is larger than src of shape [2, 2] in dimension 1");
  EXPECT_THROW_MSG(
      scatter(x, 1, zeros({4, 1}, kInt64), zeros({4, 1})), ShapeError,
      "[scatter] index of shape [4, 1] is larger than x of shape [3, 4] in dimension 0");
  EXPECT_THROW_MSG(
      index_add(x, 1, zeros({2}, kInt64), zeros({3, 3})), ShapeError,
      "[index_add] src of shape [3, 3] does not fit x of shape [3, 4] with an index of length 2");
  EXPECT_THROW_MSG(index_select(x, 0, zeros({1, 2}, kInt64)), ShapeError,
                   "[index_select] index must be a vector");
  EXPECT_THROW_MSG(
      masked_fill_(x, zeros({2, 3, 4}, kBool), 1), ShapeError,
      "[masked_fill_] mask of shape [2, 3, 4] does not broadcast to x of shape [3, 4]");
  EXPECT_THROW_MSG(masked_fill(x, zeros({3}, kBool), 1), ShapeError, "[masked_fill]");
  EXPECT_THROW_MSG(tril(zeros({3})), ShapeError,
                   "[tril] expects a tensor of at least 2 dimensions");
  Tensor expanded = zeros({1, 4}).expand({3, 4});
  EXPECT_THROW_MSG(scatter_(expanded, 1, zeros({1, 1}, kInt64), zeros({1, 1})), ValueError,
                   "[scatter_] cannot write into a tensor");
}

TEST(IndexErrors, MasksKAndOneHot) {
  Tensor x = zeros({3});
  EXPECT_THROW_MSG(masked_fill(x, zeros({3}, kInt32), 1), DTypeError,
                   "[masked_fill] expected a bool mask, got int32");
  EXPECT_THROW_MSG(masked_fill_(x, zeros({3}, kUInt8), 1), DTypeError,
                   "[masked_fill_] expected a bool mask, got uint8");
  EXPECT_THROW_MSG(masked_select(x, zeros({3})), DTypeError,
                   "[masked_select] expected a bool mask, got float32");
  EXPECT_THROW_MSG(topk(zeros({2, 7}), 8), ValueError,
                   "[topk] k = 8 is out of range for dimension 1 of size 7");
  EXPECT_THROW_MSG(topk(zeros({2, 7}), -1), ValueError, "[topk] k = -1 is out of range");
  EXPECT_THROW_MSG(sort(zeros({2, 7}), 2), IndexError, "[sort]");
  EXPECT_THROW_MSG(one_hot(tensor<int64_t>({0, -1, 1})), IndexError,
                   "[one_hot] class values must be non-negative, got -1");
  EXPECT_THROW_MSG(one_hot(tensor<int64_t>({0, 2, 5}), 3), IndexError,
                   "[one_hot] class value 5 is out of range for num_classes 3");
  EXPECT_THROW_MSG(one_hot(zeros({0}, kInt64)), ValueError,
                   "[one_hot] cannot infer the number of classes");
  EXPECT_THROW_MSG(one_hot(tensor<int64_t>({1}), -2), ValueError, "[one_hot] num_classes must be");
}

TEST(JoinErrors, CatStackSplitChunk) {
  Tensor a = zeros({2, 3});
  EXPECT_THROW_MSG(cat({a, zeros({2, 4})}, 0), ShapeError,
                   "[cat] sizes of tensors must match except in dimension 0: tensor 0 has shape "
                   "[2, 3] but tensor 1 has shape [2, 4]");
  EXPECT_THROW_MSG(
      cat({a, a, zeros({3, 2})}, -1), ShapeError,
      "except in dimension 1: tensor 0 has shape [2, 3] but tensor 2 has shape [3, 2]");
  EXPECT_THROW_MSG(cat({a, zeros({2})}), ShapeError,
                   "[cat] tensors must have the same number of dimensions: tensor 0 has shape [2, "
                   "3] but tensor 1 has shape [2]");
  EXPECT_THROW_MSG(cat({scalar_tensor(1), scalar_tensor(2)}), ShapeError,
                   "[cat] zero-dimensional tensor (at position 0) cannot be concatenated");
  EXPECT_THROW_MSG(cat({}), ValueError, "[cat] expected a non-empty list");
  EXPECT_THROW_MSG(cat({a}, 2), IndexError, "[cat]");
  EXPECT_THROW_MSG(stack({a, a.t()}), ShapeError,
                   "[stack] expects tensors of equal shape, but tensor 0 has shape [2, 3] and "
                   "tensor 1 has shape [3, 2]");
  EXPECT_THROW_MSG(stack({}), ValueError, "[stack] expected a non-empty list");
  EXPECT_THROW_MSG(stack({a}, 3), IndexError, "[stack]");
  EXPECT_THROW_MSG(split(a, -1, 1), ValueError, "[split] split_size must be non-negative");
  EXPECT_THROW_MSG(split(a, 0, 1), ValueError, "[split] split_size can be 0 only");
  EXPECT_THROW_MSG(split(a, Shape{1, 1}, 1), ValueError,
                   "[split] split sizes [1, 1] must sum to 3");
  EXPECT_THROW_MSG(split(a, Shape{4, -1}, 1), ValueError,
                   "[split] split sizes must be non-negative");
  EXPECT_THROW_MSG(split(scalar_tensor(1), 1), ShapeError,
                   "[split] expects a tensor of at least 1");
  EXPECT_THROW_MSG(chunk(a, 0), ValueError, "[chunk] chunks must be positive, got 0");
}
