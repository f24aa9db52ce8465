// Tests of the indexing family (index_select, gather, scatter*, index_add*, masked_*) and
// its errors. Every expected value comes from a plain loop over float64 copies of the inputs,
// on random data in every memory layout, several dtypes and all dims (negative too); error
// paths are checked by their messages.
#include "ops/index_test_helpers.h"

using namespace ignis::testing::index_tests;


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

