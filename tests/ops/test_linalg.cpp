// Tests of the linear-algebra family (matmul, mm, bmm, addmm, baddbmm, dot, outer) against a
// float64 reference written with plain loops here: every matmul shape rule, every memory
// layout of both operands, each dtype with its own tolerance, alpha/beta (beta = 0 ignores
// NaN), empty dimensions, batches split across threads, a size large enough for BLAS blocking
// and threading, and each error message.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "core/shape.h"
#include "support/test_support.h"

namespace ignis {
namespace {

using namespace ignis::testing;
using detail::shape_str;

// ---------------------------------------------------------------------------------------------
// The reference: PyTorch's matmul rules over float64 values in row-major order.

struct Ref {
  std::vector<double> values;
  Shape shape;
};

Ref ref_matmul(const std::vector<double>& av, Shape sa, const std::vector<double>& bv, Shape sb) {
  const bool vec_a = sa.size() == 1, vec_b = sb.size() == 1;
  if (vec_a) sa.insert(sa.begin(), 1);
  if (vec_b) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  const size_t nd = std::max(batch_a.size(), batch_b.size());
  Shape batch(nd);
  auto size_at = [&](const Shape& s, size_t i) {
    return i < nd - s.size() ? 1 : s[i - (nd - s.size())];
  };
  for (size_t i = 0; i < nd; ++i) batch[i] = std::max(size_at(batch_a, i), size_at(batch_b, i));
  // The batch entry of an operand that a result batch index reads (size-1 dims broadcast).
  auto source = [&](const Shape& s, const std::vector<int64_t>& idx) {
    std::vector<int64_t> own(s.size());
    for (size_t i = 0; i < s.size(); ++i) own[i] = s[i] == 1 ? 0 : idx[i + (nd - s.size())];
    return ravel(own, s);
  };
  int64_t nb = 1;
  for (int64_t s : batch) nb *= s;
  Ref r;
  r.values.assign(size_t(nb * m * n), 0.0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    const auto idx = unravel(bi, batch);
    const double* a = av.data() + source(batch_a, idx) * m * k;
    const double* b = bv.data() + source(batch_b, idx) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
        r.values[size_t((bi * m + i) * n + j)] = s;
      }
  }
  r.shape = batch;
  if (!vec_a) r.shape.push_back(m);
  if (!vec_b) r.shape.push_back(n);
  return r;
}

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

/// Inputs exactly representable in dtype: floats in [-1, 1) rounded through the dtype, small
/// integers (non-negative for uint8) so integer products stay exact.
std::vector<double> inputs(const Shape& shape, DType dtype, uint64_t seed) {
  const int64_t n = numel_of(shape);
  if (is_floating(dtype)) return round_to(random_values(n, -1, 1, seed), dtype);
  std::vector<double> v = random_values(n, dtype == kUInt8 ? 0 : -9, dtype == kUInt8 ? 4 : 9, seed);
  for (double& x : v) x = std::floor(x);
  return v;
}

/// What storing the exact result in dtype gives: uint8 wraps modulo 256 (as in PyTorch).
std::vector<double> stored(std::vector<double> v, DType dtype) {
  if (dtype == kUInt8)
    for (double& x : v) x = std::fmod(x, 256.0);
  return v;
}

/// rtol and atol for a product with inner size k: float results accumulate rounding error
/// proportional to k (|inputs| <= 1); 16-bit results are rounded once at the end.
struct Tol {
  double rtol, atol;
};
Tol tol(DType dtype, int64_t k) {
  const double kk = double(std::max<int64_t>(k, 1));
  switch (dtype) {
    case kFloat64:
      return {1e-12, 1e-14 * kk};
    case kFloat32:
      return {1e-5, 1e-6 * kk};
    case kBFloat16:
      return {8e-3, 1e-5 * kk};
    case kFloat16:
      return {1e-3, 1e-5 * kk};
    default:
      return {0, 0};
  }
}

constexpr DType kMatmulDTypes[] = {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kUInt8};

/// matmul(a, b) for a and b in the given layouts, compared with the reference.
void check_matmul(const Shape& sa, const Shape& sb, DType dtype, Layout la, Layout lb,
                  uint64_t seed) {
  SCOPED_TRACE(::testing::Message()
               << shape_str(sa) << " @ " << shape_str(sb) << " " << dtype_name(dtype) << " "
               << layout_name(la) << "/" << layout_name(lb));
  const auto av = inputs(sa, dtype, seed), bv = inputs(sb, dtype, seed + 1);
  const Ref ref = ref_matmul(av, sa, bv, sb);
  Tensor out = matmul(make_input(av, sa, dtype, la), make_input(bv, sb, dtype, lb));
  EXPECT_EQ(out.sizes(), ref.shape);
  EXPECT_EQ(out.dtype(), dtype);
  EXPECT_TRUE(out.is_contiguous());
  const Tol t = tol(dtype, sa.back());
  EXPECT_TRUE(all_close(out, stored(ref.values, dtype), t.rtol, t.atol));
}

/// out = beta * input (broadcast to the product's shape) + alpha * product, in float64.
std::vector<double> ref_add(const std::vector<double>& product, const Shape& out_shape,
                            const std::vector<double>& input, const Shape& in_shape, double beta,
                            double alpha) {
  std::vector<double> r(product.size());
  const size_t off = out_shape.size() - in_shape.size();
  for (size_t i = 0; i < r.size(); ++i) {
    const auto idx = unravel(int64_t(i), out_shape);
    std::vector<int64_t> own(in_shape.size());
    for (size_t d = 0; d < own.size(); ++d) own[d] = in_shape[d] == 1 ? 0 : idx[d + off];
    const double x = input[size_t(ravel(own, in_shape))];
    r[i] = alpha * product[i] + (beta == 0 ? 0.0 : beta * x);
  }
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// matmul

/// Every shape rule of PyTorch's matmul: vector/matrix combinations, batches on either side,
/// broadcast batch dimensions, size-1 dimensions.
const std::vector<std::pair<Shape, Shape>> kMatmulShapes = {
    {{5}, {5}},        // dot -> 0-dim
    {{3, 5}, {5}},     // mv
    {{5}, {5, 4}},     // vector-matrix
    {{3, 5}, {5, 4}},  // mm
    {{1, 1}, {1, 1}},
    {{3, 1}, {1, 4}},  // k = 1
    {{1, 5}, {5, 1}},
    {{2, 3, 5}, {5, 4}},        // batch @ matrix (folded into one GEMM)
    {{2, 3, 5}, {5}},           // batch @ vector
    {{5}, {2, 5, 4}},           // vector @ batch
    {{3, 5}, {2, 5, 4}},        // matrix @ batch
    {{2, 3, 5}, {2, 5, 4}},     // bmm
    {{2, 1, 3, 4}, {5, 4, 2}},  // broadcast batch dims -> [2, 5, 3, 2]
    {{1, 3, 5}, {2, 5, 4}},
    {{2, 3, 1, 5}, {3, 5, 4}},  // m = 1 batches
    {{2, 3, 2, 5}, {5, 4}},     // 4-D @ 2-D
    {{2, 3, 2, 5}, {5}},        // 4-D @ vector
    {{5}, {2, 3, 5, 4}},        // vector @ 4-D
    {{3, 1, 2, 5}, {1, 4, 5, 3}},
};

TEST(Matmul, ShapeRulesAllLayoutsAllDTypes) {
  uint64_t seed = 1;
  for (DType dtype : kMatmulDTypes)
    for (const auto& [sa, sb] : kMatmulShapes)
      for (Layout la : kAllLayouts)
        for (Layout lb : kAllLayouts) check_matmul(sa, sb, dtype, la, lb, seed++);
}

TEST(Matmul, ResultShapes) {
  EXPECT_EQ(matmul(ones({2, 1, 3, 4}), ones({5, 4, 2})).sizes(), (Shape{2, 5, 3, 2}));
  EXPECT_EQ(matmul(ones({4}), ones({4})).dim(), 0);
  EXPECT_EQ(matmul(ones({7, 4}), ones({4})).sizes(), (Shape{7}));
  EXPECT_EQ(matmul(ones({4}), ones({3, 4, 6})).sizes(), (Shape{3, 6}));
  EXPECT_EQ(ones({3, 4}).matmul(ones({4, 2})).sizes(), (Shape{3, 2}));
}

/// Larger than BLAS's blocking (and OpenBLAS's threading threshold) in each dimension.
TEST(Matmul, LargeAllLayouts) {
  const Shape sa{300, 257}, sb{257, 311};
  for (DType dtype : {kFloat32, kFloat64}) {
    const auto av = inputs(sa, dtype, 11), bv = inputs(sb, dtype, 12);
    const Ref ref = ref_matmul(av, sa, bv, sb);
    const Tol t = tol(dtype, 257);
    for (Layout la : kAllLayouts)
      for (Layout lb : kAllLayouts) {
        SCOPED_TRACE(::testing::Message()
                     << dtype_name(dtype) << " " << layout_name(la) << "/" << layout_name(lb));
        Tensor out = matmul(make_input(av, sa, dtype, la), make_input(bv, sb, dtype, lb));
        EXPECT_TRUE(all_close(out, ref.values, t.rtol, t.atol));
      }
  }
  for (DType dtype : {kBFloat16, kFloat16, kInt64, kInt32}) {
    const auto av = inputs(sa, dtype, 13), bv = inputs(sb, dtype, 14);
    const Ref ref = ref_matmul(av, sa, bv, sb);
    const Tol t = tol(dtype, 257);
    for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " " << layout_name(l));
      Tensor out = matmul(make_input(av, sa, dtype, l), make_input(bv, sb, dtype, l));
      EXPECT_TRUE(all_close(out, ref.values, t.rtol, t.atol));
    }
  }
}

/// Batches: many small matrices (split across threads, one single-threaded GEMM each), a few
/// large ones (each threaded by BLAS), broadcast weights, in every dtype family.
TEST(Matmul, BatchedParallel) {
  const int saved = get_num_threads();
  for (int threads : {1, 4}) {
    set_num_threads(threads);
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    uint64_t seed = 100;
    for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt32}) {
      check_matmul({256, 12, 16}, {256, 16, 10}, dtype, Layout::Contiguous, Layout::Contiguous,
                   seed++);
      check_matmul({256, 12, 16}, {256, 16, 10}, dtype, Layout::Transposed, Layout::Strided,
                   seed++);
      check_matmul({16, 4, 12, 16}, {4, 16, 10}, dtype, Layout::Contiguous, Layout::Transposed,
                   seed++);
      check_matmul({3, 130, 140}, {3, 140, 120}, dtype, Layout::Contiguous, Layout::Contiguous,
                   seed++);
      check_matmul({64, 16, 16}, {16, 20}, dtype, Layout::Transposed, Layout::Contiguous, seed++);
      check_matmul({64, 1, 16}, {64, 16, 20}, dtype, Layout::Contiguous, Layout::Contiguous,
                   seed++);
      check_matmul({64, 16, 16}, {16}, dtype, Layout::Offset, Layout::Strided, seed++);
    }
  }
  set_num_threads(saved);
}

/// Operands with stride-0 dimensions: a broadcast weight, repeated rows, a repeated vector.
TEST(Matmul, ExpandedOperands) {
  const auto wv = inputs({4, 3}, kFloat32, 7), xv = inputs({5, 2, 4}, kFloat32, 8);
  Tensor w = make_input(wv, {4, 3}, kFloat32);
  Tensor x = make_input(xv, {5, 2, 4}, kFloat32);
  std::vector<double> w_rep;
  for (int i = 0; i < 5; ++i) w_rep.insert(w_rep.end(), wv.begin(), wv.end());
  const Ref ref = ref_matmul(xv, {5, 2, 4}, w_rep, {5, 4, 3});
  EXPECT_TRUE(all_close(bmm(x, w.expand({5, 4, 3})), ref.values, 1e-5, 1e-6));
  EXPECT_TRUE(all_close(matmul(x, w.expand({5, 4, 3})), ref.values, 1e-5, 1e-6));

  // Every row of the left operand is the same vector (row stride 0).
  const auto rv = inputs({4}, kFloat64, 9);
  std::vector<double> rows;
  for (int i = 0; i < 6; ++i) rows.insert(rows.end(), rv.begin(), rv.end());
  const auto wd = inputs({4, 3}, kFloat64, 10);
  Tensor r = make_input(rv, {4}, kFloat64);
  EXPECT_TRUE(all_close(mm(r.expand({6, 4}), make_input(wd, {4, 3}, kFloat64)),
                        ref_matmul(rows, {6, 4}, wd, {4, 3}).values, 1e-12, 1e-14));
  // A vector whose elements are all one element (stride 0).
  Tensor c = full({1}, 0.5, kFloat64).expand({4});
  EXPECT_TRUE(all_close(matmul(c, make_input(wd, {4, 3}, kFloat64)),
                        ref_matmul({0.5, 0.5, 0.5, 0.5}, {4}, wd, {4, 3}).values, 1e-12, 1e-14));
  Tensor wt = make_input(wd, {4, 3}, kFloat64).t();
  EXPECT_TRUE(all_close(matmul(wt, c),
                        ref_matmul(values_of(wt), {3, 4}, {0.5, 0.5, 0.5, 0.5}, {4}).values, 1e-12,
                        1e-14));
}

TEST(Matmul, IntegerOverflowWraps) {
  // 65536 * 65537 = 2^32 + 65536: int32 keeps the low 32 bits, uint8 the low 8.
  Tensor a = full({1, 1}, 65536, kInt32), b = full({1, 1}, 65537, kInt32);
  EXPECT_EQ(matmul(a, b).item<int64_t>(), 65536);
  EXPECT_EQ(matmul(full({1, 1}, 16, kUInt8), full({1, 1}, 17, kUInt8)).item<int64_t>(), 16);
}

// ---------------------------------------------------------------------------------------------
// mm, bmm, dot, outer

TEST(Mm, AllLayouts) {
  uint64_t seed = 200;
  for (DType dtype : kMatmulDTypes)
    for (Layout la : kAllLayouts)
      for (Layout lb : kAllLayouts) {
        const auto av = inputs({6, 7}, dtype, seed++), bv = inputs({7, 5}, dtype, seed++);
        const Tol t = tol(dtype, 7);
        EXPECT_TRUE(
            all_close(mm(make_input(av, {6, 7}, dtype, la), make_input(bv, {7, 5}, dtype, lb)),
                      stored(ref_matmul(av, {6, 7}, bv, {7, 5}).values, dtype), t.rtol, t.atol))
            << dtype_name(dtype) << " " << layout_name(la) << "/" << layout_name(lb);
      }
}

TEST(Bmm, AllLayouts) {
  uint64_t seed = 300;
  for (DType dtype : kMatmulDTypes)
    for (Layout la : kAllLayouts)
      for (Layout lb : kAllLayouts) {
        const auto av = inputs({3, 4, 6}, dtype, seed++), bv = inputs({3, 6, 5}, dtype, seed++);
        const Tol t = tol(dtype, 6);
        EXPECT_TRUE(all_close(
            bmm(make_input(av, {3, 4, 6}, dtype, la), make_input(bv, {3, 6, 5}, dtype, lb)),
            stored(ref_matmul(av, {3, 4, 6}, bv, {3, 6, 5}).values, dtype), t.rtol, t.atol))
            << dtype_name(dtype) << " " << layout_name(la) << "/" << layout_name(lb);
      }
}

TEST(Dot, DTypesAndLayouts) {
  uint64_t seed = 400;
  for (DType dtype : kMatmulDTypes)
    for (Layout la : kAllLayouts)
      for (Layout lb : kAllLayouts) {
        const auto av = inputs({37}, dtype, seed++), bv = inputs({37}, dtype, seed++);
        double s = 0;
        for (size_t i = 0; i < av.size(); ++i) s += av[i] * bv[i];
        Tensor d = dot(make_input(av, {37}, dtype, la), make_input(bv, {37}, dtype, lb));
        EXPECT_EQ(d.dim(), 0);
        EXPECT_EQ(d.dtype(), dtype);
        const Tol t = tol(dtype, 37);
        EXPECT_TRUE(all_close(d, stored({s}, dtype), t.rtol, t.atol)) << dtype_name(dtype);
      }
  // Long enough for BLAS's vectorised and blocked dot.
  const auto av = inputs({100003}, kFloat64, 1), bv = inputs({100003}, kFloat64, 2);
  double s = 0;
  for (size_t i = 0; i < av.size(); ++i) s += av[i] * bv[i];
  EXPECT_TRUE(all_close(
      dot(make_input(av, {100003}, kFloat64, Layout::Strided), make_input(bv, {100003}, kFloat64)),
      {s}, 1e-10, 1e-10));
}

TEST(Outer, ValuesAndPromotion) {
  const auto av = inputs({5}, kFloat32, 1), bv = inputs({4}, kFloat32, 2);
  std::vector<double> ref;
  for (double x : av)
    for (double y : bv) ref.push_back(x * y);
  for (Layout l : kAllLayouts) {
    Tensor o = outer(make_input(av, {5}, kFloat32, l), make_input(bv, {4}, kFloat32, l));
    EXPECT_EQ(o.sizes(), (Shape{5, 4}));
    EXPECT_TRUE(all_close(o, ref, 1e-6, 0));
  }
  // outer is a broadcast product: it promotes like mul and accepts integers and bool.
  Tensor oi = outer(arange(3, kInt32), make_input(bv, {4}, kFloat32));
  EXPECT_EQ(oi.dtype(), kFloat32);
  std::vector<double> refi;
  for (int x = 0; x < 3; ++x)
    for (double y : bv) refi.push_back(x * y);
  EXPECT_TRUE(all_close(oi, refi, 1e-6, 0));
  Tensor ob = outer(tensor<bool>({true, false}), tensor<bool>({true, true, false}));
  EXPECT_EQ(ob.dtype(), kBool);
  EXPECT_TRUE(all_close(ob, {1, 1, 0, 0, 0, 0}, 0, 0));
}

// ---------------------------------------------------------------------------------------------
// addmm, baddbmm

TEST(Addmm, BetaAlphaAndBroadcastInput) {
  const Shape sa{5, 6}, sb{6, 4}, so{5, 4};
  uint64_t seed = 500;
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16})
    for (const Shape& si : {Shape{5, 4}, Shape{4}, Shape{1, 4}, Shape{5, 1}, Shape{}})
      for (auto [beta, alpha] : {std::pair{1.0, 1.0}, {0.5, 2.0}, {0.0, 1.0}, {-1.5, 0.0}})
        for (Layout l : {Layout::Contiguous, Layout::Transposed}) {
          const auto av = inputs(sa, dtype, seed++), bv = inputs(sb, dtype, seed++);
          auto iv = inputs(si, dtype, seed++);
          if (beta == 0) {
            iv[0] = std::numeric_limits<double>::quiet_NaN();  // must be ignored
            // A freed block of NaN that the caching allocator may hand out as the result:
            // the kernel must not read C when beta = 0.
            full(so, NAN, dtype);
          }
          Tensor out = addmm(make_input(iv, si, dtype), make_input(av, sa, dtype, l),
                             make_input(bv, sb, dtype, l), beta, alpha);
          EXPECT_EQ(out.sizes(), so);
          const auto ref = ref_add(ref_matmul(av, sa, bv, sb).values, so, iv, si, beta, alpha);
          const Tol t = tol(dtype, 6);
          EXPECT_TRUE(all_close(out, ref, t.rtol, t.atol * 4))
              << dtype_name(dtype) << " input " << shape_str(si) << " beta " << beta << " alpha "
              << alpha << " " << layout_name(l);
        }
}

/// alpha = 0 reads neither factor (NaN there is ignored), in every kernel path: dot, the two
/// gemv cases, gemm, and the 16-bit conversion.
TEST(Addmm, AlphaZeroIgnoresFactors) {
  for (DType dtype : {kFloat32, kFloat64, kBFloat16})
    for (auto [n, m] : {std::pair{1, 1}, {4, 1}, {1, 3}, {4, 3}}) {
      Tensor a = full({n, 5}, NAN, dtype), b = full({5, m}, NAN, dtype);
      EXPECT_TRUE(all_close(addmm(full({m}, 2, dtype), a, b, 1.5, 0.0),
                            std::vector<double>(size_t(n * m), 3.0), 0, 0))
          << dtype_name(dtype) << " " << n << "x" << m;
    }
}

TEST(Addmm, Integers) {
  const Shape sa{5, 6}, sb{6, 4}, so{5, 4}, si{4};
  for (DType dtype : {kInt64, kInt32}) {
    const auto av = inputs(sa, dtype, 1), bv = inputs(sb, dtype, 2), iv = inputs(si, dtype, 3);
    for (auto [beta, alpha] : {std::pair{1, 1}, {3, -2}, {0, 5}}) {
      Tensor out = addmm(make_input(iv, si, dtype), make_input(av, sa, dtype),
                         make_input(bv, sb, dtype, Layout::Transposed), beta, alpha);
      EXPECT_TRUE(
          all_close(out, ref_add(ref_matmul(av, sa, bv, sb).values, so, iv, si, beta, alpha), 0, 0))
          << dtype_name(dtype) << " beta " << beta << " alpha " << alpha;
    }
  }
}

TEST(Baddbmm, BetaAlphaAndBroadcastInput) {
  const Shape sa{3, 4, 6}, sb{3, 6, 5}, so{3, 4, 5};
  uint64_t seed = 600;
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt64})
    for (const Shape& si : {Shape{3, 4, 5}, Shape{4, 5}, Shape{5}, Shape{3, 1, 1}})
      for (auto [beta, alpha] : {std::pair{1, 1}, {2, -3}, {0, 1}})
        for (Layout la : kAllLayouts) {
          const auto av = inputs(sa, dtype, seed++), bv = inputs(sb, dtype, seed++);
          auto iv = inputs(si, dtype, seed++);
          if (beta == 0 && is_floating(dtype)) iv[0] = std::numeric_limits<double>::quiet_NaN();
          Tensor out = baddbmm(make_input(iv, si, dtype), make_input(av, sa, dtype, la),
                               make_input(bv, sb, dtype), beta, alpha);
          EXPECT_EQ(out.sizes(), so);
          const auto ref = ref_add(ref_matmul(av, sa, bv, sb).values, so, iv, si, beta, alpha);
          const Tol t = tol(dtype, 6);
          EXPECT_TRUE(all_close(out, ref, t.rtol, t.atol * 8))
              << dtype_name(dtype) << " input " << shape_str(si) << " beta " << beta << " "
              << layout_name(la);
        }
}

// ---------------------------------------------------------------------------------------------
// Empty dimensions

TEST(Linalg, EmptyDims) {
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kInt64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor z = matmul(ones({3, 0}, dtype), ones({0, 4}, dtype));  // empty sum: zeros
    EXPECT_EQ(z.sizes(), (Shape{3, 4}));
    EXPECT_TRUE(all_close(z, std::vector<double>(12, 0.0), 0, 0));
    EXPECT_EQ(matmul(ones({0, 5}, dtype), ones({5, 4}, dtype)).sizes(), (Shape{0, 4}));
    EXPECT_EQ(matmul(ones({3, 5}, dtype), ones({5, 0}, dtype)).sizes(), (Shape{3, 0}));
    EXPECT_EQ(matmul(ones({0, 2, 5}, dtype), ones({5, 4}, dtype)).sizes(), (Shape{0, 2, 4}));
    EXPECT_EQ(bmm(ones({2, 3, 0}, dtype), ones({2, 0, 4}, dtype)).sizes(), (Shape{2, 3, 4}));
    EXPECT_TRUE(all_close(bmm(ones({2, 3, 0}, dtype), ones({2, 0, 4}, dtype)),
                          std::vector<double>(24, 0.0), 0, 0));
    EXPECT_TRUE(all_close(dot(ones({0}, dtype), ones({0}, dtype)), {0.0}, 0, 0));
    EXPECT_TRUE(all_close(matmul(ones({0}, dtype), ones({0, 3}, dtype)), {0, 0, 0}, 0, 0));
    // k = 0 with an input: beta * input (and zeros when beta = 0, even over NaN).
    EXPECT_TRUE(
        all_close(addmm(full({2}, 3, dtype), ones({2, 0}, dtype), ones({0, 2}, dtype), 2, 1),
                  {6, 6, 6, 6}, 0, 0));
    if (is_floating(dtype)) {
      EXPECT_TRUE(all_close(
          addmm(full({2, 2}, NAN, dtype), ones({2, 0}, dtype), ones({0, 2}, dtype), 0.0, 1.0),
          {0, 0, 0, 0}, 0, 0));
    }
    EXPECT_EQ(addmm(ones({0, 2}, dtype), ones({0, 3}, dtype), ones({3, 2}, dtype)).sizes(),
              (Shape{0, 2}));
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(Linalg, Errors) {
  EXPECT_THROW_MSG(
      matmul(ones({64, 10}), ones({512, 10})), ShapeError,
      "[matmul] cannot multiply [64, 10] by [512, 10]: inner dimensions 10 and 512 differ");
  EXPECT_THROW_MSG(matmul(ones({3}), ones({4})), ShapeError,
                   "[matmul] cannot multiply [3] by [4]: inner dimensions 3 and 4 differ");
  EXPECT_THROW_MSG(matmul(ones({2, 3, 4}), ones({5, 4, 2})), ShapeError,
                   "[matmul] cannot multiply [2, 3, 4] by [5, 4, 2]: batch dimensions [2] and [5] "
                   "do not broadcast");
  EXPECT_THROW_MSG(matmul(scalar_tensor(1.0), ones({3})), ShapeError,
                   "[matmul] both arguments need at least one dimension, got [] and [3]");
  EXPECT_THROW_MSG(
      matmul(ones({2, 3}), ones({3, 2}, kFloat64)), DTypeError,
      "[matmul] expected both operands to have the same dtype, got float32 and float64");
  EXPECT_THROW_MSG(
      matmul(ones({2, 2}, kBool), ones({2, 2}, kBool)), DTypeError,
      "[matmul] matrix products of bool tensors are not supported (got bool and bool)");
  EXPECT_THROW_MSG(mm(ones({2, 3, 4}), ones({4, 5})), ShapeError,
                   "[mm] expected 2-D tensors, got [2, 3, 4] and [4, 5]");
  EXPECT_THROW_MSG(mm(ones({2, 3}), ones({4, 5})), ShapeError,
                   "[mm] cannot multiply [2, 3] by [4, 5]: inner dimensions 3 and 4 differ");
  EXPECT_THROW_MSG(mm(ones({2, 3}, kInt64), ones({3, 5}, kInt32)), DTypeError,
                   "[mm] expected both operands to have the same dtype, got int64 and int32");
  EXPECT_THROW_MSG(bmm(ones({2, 3}), ones({2, 3, 4})), ShapeError,
                   "[bmm] expected 3-D tensors, got [2, 3] and [2, 3, 4]");
  EXPECT_THROW_MSG(bmm(ones({2, 3, 4}), ones({3, 4, 5})), ShapeError,
                   "[bmm] cannot multiply [2, 3, 4] by [3, 4, 5]: batch sizes 2 and 3 differ");
  EXPECT_THROW_MSG(bmm(ones({2, 3, 4}), ones({2, 5, 5})), ShapeError,
                   "[bmm] cannot multiply [2, 3, 4] by [2, 5, 5]: inner dimensions 4 and 5 differ");
  EXPECT_THROW_MSG(dot(ones({3}), ones({4})), ShapeError,
                   "[dot] cannot multiply [3] by [4]: lengths 3 and 4 differ");
  EXPECT_THROW_MSG(dot(ones({3, 1}), ones({3})), ShapeError,
                   "[dot] expected 1-D tensors, got [3, 1] and [3]");
  EXPECT_THROW_MSG(dot(ones({3}), ones({3}, kFloat16)), DTypeError,
                   "[dot] expected both operands to have the same dtype, got float32 and float16");
  EXPECT_THROW_MSG(outer(ones({3, 1}), ones({3})), ShapeError,
                   "[outer] expected 1-D tensors, got [3, 1] and [3]");
  EXPECT_THROW_MSG(addmm(ones({3}), ones({2, 3}), ones({3, 4})), ShapeError,
                   "[addmm] input of shape [3] cannot be broadcast to the result shape [2, 4]");
  EXPECT_THROW_MSG(addmm(ones({2, 4}), ones({2, 3, 1}), ones({3, 4})), ShapeError,
                   "[addmm] expected 2-D tensors, got [2, 3, 1] and [3, 4]");
  EXPECT_THROW_MSG(addmm(ones({2, 4}, kFloat64), ones({2, 3}), ones({3, 4})), DTypeError,
                   "[addmm] expected input and both operands to have the same dtype, got float64 "
                   "and float32");
  EXPECT_THROW_MSG(addmm(ones({2, 4}, kInt64), ones({2, 3}, kInt64), ones({3, 4}, kInt64), 1, 0.5),
                   DTypeError, "[addmm] alpha and beta must be integers for int64 tensors");
  EXPECT_THROW_MSG(baddbmm(ones({2, 3, 5}), ones({2, 3, 4}), ones({2, 4, 5, 1})), ShapeError,
                   "[baddbmm] expected 3-D tensors, got [2, 3, 4] and [2, 4, 5, 1]");
  EXPECT_THROW_MSG(baddbmm(ones({3, 3, 5}), ones({2, 3, 4}), ones({2, 4, 5})), ShapeError,
                   "[baddbmm] input of shape [3, 3, 5] cannot be broadcast to the result shape "
                   "[2, 3, 5]");
  EXPECT_THROW_MSG(baddbmm(ones({2, 3, 5}), ones({2, 3, 4}), ones({1, 4, 5})), ShapeError,
                   "[baddbmm] cannot multiply [2, 3, 4] by [1, 4, 5]: batch sizes 2 and 1 differ");
  Tensor undefined;
  EXPECT_THROW_MSG(matmul(undefined, ones({2})), ValueError, "[matmul] undefined tensor");
}

/// The device check comes before any data is touched, so a tensor that only claims to be on
/// the GPU (host memory labelled cuda:0, never read) exercises it without a GPU.
TEST(Linalg, DeviceMismatch) {
  float host[4] = {1, 2, 3, 4};
  Tensor g = from_blob(host, {2, 2}, kFloat32, std::nullopt, nullptr, Device::cuda());
  const std::string msg = "expected all tensors on the same device, but found cpu and cuda:0";
  EXPECT_THROW_MSG(matmul(ones({2, 2}), g), DeviceError, "[matmul] " + msg);
  EXPECT_THROW_MSG(mm(ones({2, 2}), g), DeviceError, "[mm] " + msg);
  EXPECT_THROW_MSG(bmm(ones({1, 2, 2}), g), DeviceError, "[bmm] " + msg);
  EXPECT_THROW_MSG(dot(ones({2}), g), DeviceError, "[dot] " + msg);
  EXPECT_THROW_MSG(outer(ones({2}), g), DeviceError, "[outer] " + msg);
  EXPECT_THROW_MSG(addmm(g, ones({2, 2}), ones({2, 2})), DeviceError,
                   "[addmm] expected all tensors on the same device, but found cuda:0 and cpu");
  EXPECT_THROW_MSG(baddbmm(ones({1, 2, 2}), ones({1, 2, 2}), g), DeviceError, "[baddbmm] " + msg);
}

/// Small products run on one thread (Note [Small products on one thread], src/cpu/blas.cpp) by
/// lowering OpenMP's limit around the BLAS call; the caller's limit must come back afterwards,
/// for small and large products, float32 and float64, and the results stay right.
TEST(Linalg, SmallProductsRestoreTheThreadCount) {
  const int before = get_num_threads();
  set_num_threads(3);
  for (DType dt : {kFloat32, kFloat64}) {
    for (int64_t n : {8, 160}) {  // 8^3 multiply-adds stays on one thread; 160^3 does not
      Tensor a = arange(n * n, TensorOptions(dt)).reshape({n, n}) / double(n * n);
      Tensor b = a.transpose(0, 1);
      Tensor c = mm(a, b);
      EXPECT_EQ(get_num_threads(), 3) << dtype_name(dt) << " n=" << n;
      // One entry against a float64 sum: c[i, j] = sum_k a[i, k] * a[j, k].
      const int64_t i = n - 1, j = n / 2;
      double want = 0;
      for (int64_t k = 0; k < n; ++k)
        want += double(i * n + k) / double(n * n) * (double(j * n + k) / double(n * n));
      EXPECT_NEAR(c[i][j].item<double>(), want, 1e-4 * std::abs(want));
    }
  }
  set_num_threads(before);
}

/// The float32 products above run on whichever library IGNIS_CPU_GEMM names: ctest runs this
/// file three times (tests/CMakeLists.txt), with auto, openblas and onednn, and this checks
/// that each run really used the library it names, so every path has passed the tests above.
TEST(Linalg, CpuMatmulLibraryFollowsIgnisCpuGemm) {
  const char* env = std::getenv("IGNIS_CPU_GEMM");
  const std::string wanted = env ? env : "auto";
  const std::string library = cpu_matmul_library();
  if (wanted == "openblas") {
    EXPECT_EQ(library.rfind("OpenBLAS (", 0), 0u) << library;
  } else if (wanted == "onednn") {
    EXPECT_EQ(library.rfind("float32: oneDNN sgemm", 0), 0u) << library;
  } else {
    EXPECT_TRUE(
        library.rfind("OpenBLAS (", 0) == 0 || library.rfind("float32: oneDNN sgemm", 0) == 0)
        << library;
  }
}

}  // namespace ignis
