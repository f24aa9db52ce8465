// Tests of joining and ordering (cat, stack, split, chunk, one_hot, sort, argsort, topk,
// tril, triu) and their errors, against plain loops over float64 copies of the inputs.
#include "ops/index_test_helpers.h"

using namespace ignis::testing::index_tests;

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

// Rows long enough for the one-pass selection of a small k (16 values tested at a time against
// the current k-th best): random values with ties, NaN, ±0 and ±inf, rows in increasing and in
// decreasing order (every value enters), on contiguous and strided rows, for k on both sides
// of the limit of that path (16) against the stable reference order.
TEST(Topk, LongRowsSmallK) {
  uint64_t seed = 1250;
  const int64_t n = 1000;
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32})
    for (int pattern = 0; pattern < 3; ++pattern)
      for (int64_t dim : {1, 0}) {
        const Shape xs = dim == 1 ? Shape{3, n} : Shape{n, 3};
        std::vector<double> xv = tie_values(dt, numel_of(xs), ++seed);
        if (pattern > 0)
          for (int64_t i = 0; i < numel_of(xs); ++i) {
            const int64_t along = dim == 1 ? i % n : i / 3;
            xv[size_t(i)] = double(pattern == 1 ? along : -along) / 8;  // ties in bf16
          }
        xv = round_to(xv, dt);  // the reference orders the values the tensor holds
        Tensor x = make_input(xv, xs, dt, Layout::Contiguous);
        for (bool largest : {true, false})
          for (int64_t k : {1, 5, 16, 17}) {
            auto [values, indices] = topk(x, k, dim, largest);
            auto [wv, wi] = ref_first_k(xv, xs, dim, largest, k);
            EXPECT_TRUE(same(values, wv)) << dtype_name(dt) << " pattern " << pattern << " dim "
                                          << dim << " largest " << largest << " k " << k;
            EXPECT_TRUE(same(indices, wi)) << dtype_name(dt) << " pattern " << pattern << " dim "
                                           << dim << " largest " << largest << " k " << k;
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
        // The extremes: i + diagonal must not overflow (every element kept, or none).
        for (int64_t diag :
             {std::numeric_limits<int64_t>::min(),
              int64_t(-6),
              int64_t(-2),
              int64_t(-1),
              int64_t(0),
              int64_t(1),
              int64_t(3),
              int64_t(7),
              std::numeric_limits<int64_t>::max()}) {
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
