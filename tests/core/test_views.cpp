// Views share storage and address the right elements (checked against index arithmetic on
// the row-major source), reshape copies only when it must, copies convert dtypes, and every
// bad argument gives an error naming the op.
#include <cmath>

#include "core/iterator.h"
#include "core/tensor_impl.h"
#include "support/test_support.h"

using namespace ignis;
using namespace ignis::testing;

TEST(Views, PermuteTransposeAddressTheRightElements) {
  const Shape shape{2, 3, 4};
  Tensor x = arange(24, kFloat64).reshape(shape);
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.sizes(), (Shape{4, 2, 3}));
  EXPECT_TRUE(p.is_same_storage(x));
  EXPECT_FALSE(p.is_contiguous());
  auto v = values_of(p);
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(v[size_t((k * 2 + i) * 3 + j)], double(i * 12 + j * 4 + k));
  Tensor t = x.transpose(-1, 0);
  EXPECT_EQ(t.sizes(), (Shape{4, 3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 4, 12}));
  EXPECT_THROW_MSG(x.permute({0, 1}), ShapeError, "[permute] expected 3 dims");
  EXPECT_THROW_MSG(x.permute({0, 1, 1}), IndexError, "[permute] dimension 1 repeated");
  EXPECT_THROW_MSG(x.t(), ShapeError, "[t] expects a tensor of at most 2 dims");
}

TEST(Views, NarrowSliceSelect) {
  Tensor x = arange(30, kFloat64).reshape({5, 6});
  Tensor n = x.narrow(1, 2, 3);
  EXPECT_EQ(values_of(n), (std::vector<double>{2, 3, 4, 8, 9, 10, 14, 15, 16, 20, 21, 22, 26, 27, 28}));
  Tensor s = x.slice(0, 1, std::nullopt, 2).slice(1, -4, -1);  // rows 1,3; cols 2..4
  EXPECT_EQ(values_of(s), (std::vector<double>{8, 9, 10, 20, 21, 22}));
  Tensor sel = x.select(1, -1);
  EXPECT_EQ(values_of(sel), (std::vector<double>{5, 11, 17, 23, 29}));
  EXPECT_EQ(x[2][3].item<double>(), 15.0);
  EXPECT_EQ(x.slice(0, 10, 20).numel(), 0);  // out-of-range slice bounds clamp like Python
  EXPECT_THROW_MSG(x.narrow(0, 3, 3), IndexError, "[narrow] start 3 and length 3");
  EXPECT_THROW_MSG(x.select(0, 5), IndexError, "[select] index 5 is out of range for dimension 0 of size 5");
  EXPECT_THROW_MSG(x.slice(0, 0, 2, 0), ValueError, "[slice] step must be positive");
  EXPECT_THROW_MSG(x.select(2, 0), IndexError, "[select] dimension 2 is out of range");
}

TEST(Views, ViewAndReshape) {
  Tensor x = arange(24, kFloat32).reshape({2, 3, 4});
  Tensor v = x.view({4, -1});
  EXPECT_EQ(v.sizes(), (Shape{4, 6}));
  EXPECT_TRUE(v.is_same_storage(x));
  // A transposed tensor cannot be viewed flat, but can be reshaped (which copies).
  Tensor t = x.transpose(1, 2);
  EXPECT_THROW_MSG(t.view({24}), ShapeError, "[view] cannot view a tensor of shape [2, 4, 3]");
  Tensor r = t.reshape({24});
  EXPECT_FALSE(r.is_same_storage(x));
  auto rv = values_of(r);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(rv[size_t(b * 12 + k * 3 + j)], double(b * 12 + j * 4 + k));
  // Splitting a dim of a non-contiguous tensor is still a view.
  Tensor split = t.view({2, 2, 2, 3});
  EXPECT_TRUE(split.is_same_storage(x));
  EXPECT_EQ(values_of(split), values_of(t));
  EXPECT_THROW_MSG(x.view({5, -1}), ShapeError, "[view] shape [5, -1] is invalid for input of size 24");
  EXPECT_THROW_MSG(x.view({-1, -1}), ShapeError, "only one dimension can be -1");
  EXPECT_EQ(zeros({0, 3}).reshape({3, 0, 2}).sizes(), (Shape{3, 0, 2}));
  // -1 is ambiguous for an empty tensor (PyTorch refuses too).
  EXPECT_THROW_MSG(zeros({0, 3}).reshape({3, 0, -1}), ShapeError, "[reshape] shape [3, 0, -1]");
  EXPECT_EQ(scalar_tensor(2.0).view({1, 1}).sizes(), (Shape{1, 1}));
}

TEST(Views, ExpandSqueezeUnsqueezeFlatten) {
  Tensor x = tensor<double>({1, 2, 3}).view({3, 1});
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  auto ev = values_of(e);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(ev[size_t(i)], double((i / 4) % 3 + 1));
  EXPECT_EQ(x.expand({-1, 5}).sizes(), (Shape{3, 5}));
  EXPECT_THROW_MSG(x.expand({4, 4}), ShapeError, "[expand] cannot expand shape [3, 1] to [4, 4]");
  Tensor u = x.unsqueeze(0).unsqueeze(-1);
  EXPECT_EQ(u.sizes(), (Shape{1, 3, 1, 1}));
  EXPECT_EQ(u.squeeze().sizes(), (Shape{3}));
  EXPECT_EQ(u.squeeze(0).sizes(), (Shape{3, 1, 1}));
  EXPECT_EQ(u.squeeze(1).sizes(), (Shape{1, 3, 1, 1}));
  EXPECT_EQ(zeros({2, 3, 4, 5}).flatten(1, 2).sizes(), (Shape{2, 12, 5}));
  EXPECT_EQ(zeros({2, 12}).unflatten(1, {3, -1}).sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(zeros({}).flatten().sizes(), (Shape{1}));
  EXPECT_THROW_MSG(zeros({2, 3}).flatten(1, 0), ValueError, "[flatten] start_dim 1 must not come after end_dim 0");
}

TEST(Views, AsStridedChecksBounds) {
  Tensor x = arange(10, kFloat64);
  Tensor w = x.as_strided({4, 3}, {2, 1});  // sliding windows
  EXPECT_EQ(values_of(w), (std::vector<double>{0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8}));
  EXPECT_THROW_MSG(x.as_strided({4, 3}, {3, 1}), IndexError, "[as_strided]");
  EXPECT_THROW_MSG(x.as_strided({2}, {1, 1}), ShapeError, "differ in length");
}

TEST(Copy, ContiguousCloneAndCopyIntoViews) {
  for (Layout l : kAllLayouts) {
    SCOPED_TRACE(layout_name(l));
    auto vals = random_values(60, -5, 5, 1);
    Tensor x = make_input(vals, {3, 4, 5}, kFloat32, l);
    Tensor c = x.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_TRUE(all_close(c, round_to(vals, kFloat32), 0, 0));
    Tensor k = x.clone();
    EXPECT_FALSE(k.is_same_storage(x));
    EXPECT_TRUE(all_close(k, round_to(vals, kFloat32), 0, 0));
  }
  // copy_ into a strided view writes only the viewed elements and broadcasts the source.
  Tensor big = zeros({4, 6}, kFloat64);
  big.slice(1, 1, std::nullopt, 2).copy_(tensor<double>({1, 2, 3}));
  EXPECT_EQ(values_of(big[0]), (std::vector<double>{0, 1, 0, 2, 0, 3}));
  EXPECT_EQ(values_of(big[3]), (std::vector<double>{0, 1, 0, 2, 0, 3}));
  EXPECT_THROW_MSG(big.copy_(zeros({5})), ShapeError, "[copy_]");
  EXPECT_THROW_MSG(zeros({3}).expand({2, 3}).copy_(ones({2, 3})), ValueError,
                   "[copy_] cannot write into a tensor of shape [2, 3] whose dimension 0 is broadcast");
  // Overlapping source and destination: the copy reads the old values.
  Tensor sq = arange(9, kFloat64).reshape({3, 3});
  sq.copy_(sq.t());
  EXPECT_EQ(values_of(sq), (std::vector<double>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
}

TEST(Copy, TransposingCopiesMatchIndexArithmetic) {
  // Copies whose input runs along another dim than their output go band by band (Note
  // [Transposing copies]): edges that are not multiples of a step, a batch of transposes,
  // NCHW <-> channels-last, and dtype conversions on the way; each element checked against
  // the row-major source by its indices.
  const auto vals = random_values(70 * 45, -50, 50, 3);
  const Tensor m = make_input(vals, {70, 45}, kFloat64);
  for (DType to : {kFloat64, kFloat32, kBFloat16, kInt32}) {
    SCOPED_TRACE(dtype_name(to));
    const std::vector<double> t = values_of(m.t().to(to).contiguous());
    for (int64_t i = 0; i < 45; ++i)
      for (int64_t j = 0; j < 70; ++j) {
        const double v = vals[size_t(j * 45 + i)];
        const double want = to == kFloat32    ? double(float(v))
                            : to == kBFloat16 ? double(float(BFloat16(float(v))))
                            : to == kInt32    ? std::trunc(v)
                                              : v;
        ASSERT_EQ(t[size_t(i * 70 + j)], want) << i << "," << j;
      }
  }
  const auto bv = random_values(3 * 40 * 33, -1, 1, 4);
  const std::vector<double> b =
      values_of(make_input(bv, {3, 40, 33}, kFloat32).permute({0, 2, 1}).contiguous());
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t i = 0; i < 33; ++i)
      for (int64_t j = 0; j < 40; ++j)
        ASSERT_EQ(
            b[size_t((n * 33 + i) * 40 + j)], double(float(bv[size_t((n * 40 + j) * 33 + i)])));
  // [2, 35, 6, 7]: 35 channels and 42 pixels per image, both past a tile.
  const auto iv = random_values(2 * 35 * 42, -1, 1, 5);
  const Tensor nchw = make_input(iv, {2, 35, 6, 7}, kFloat32);
  const Tensor cl = nchw.contiguous(MemoryFormat::channels_last);
  const std::vector<double> want = round_to(iv, kFloat32);
  EXPECT_EQ(values_of(cl), want);
  const Tensor raw = cl.permute({0, 2, 3, 1});  // the memory order of cl, as a view
  ASSERT_TRUE(raw.is_contiguous());
  const std::vector<double> r = values_of(raw);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 35; ++c)
      for (int64_t s = 0; s < 42; ++s)
        ASSERT_EQ(r[size_t((n * 42 + s) * 35 + c)], want[size_t((n * 35 + c) * 42 + s)]);
  EXPECT_EQ(values_of(cl.contiguous()), want);  // and back to NCHW
}

TEST(Copy, LargeTransposingCopiesKeepEveryValue) {
  // 32-bit values move in 8x8 register transposes, with streaming stores past 4 MB when the
  // output's rows are 32-byte aligned (Note [Transposing copies]): int32 values spread over
  // all 32 bits, [3, 1032, 520] -> [3, 520, 1032] (6.4 MB, rows of 1032 values: aligned, and
  // a last step of 8 rows), and float32 [1030, 1100] -> [1100, 1030] (4.5 MB, rows of 1030:
  // not aligned, so stored plainly); each element checked by its indices.
  {
    auto iv = random_values(3 * 1032 * 520, -2.1e9, 2.1e9, 6);
    for (double& e : iv) e = std::trunc(e);
    const std::vector<double> t =
        values_of(make_input(iv, {3, 1032, 520}, kInt32).permute({0, 2, 1}).contiguous());
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 520; ++i)
        for (int64_t j = 0; j < 1032; ++j)
          ASSERT_EQ(t[size_t((n * 520 + i) * 1032 + j)], iv[size_t((n * 1032 + j) * 520 + i)])
              << n << "," << i << "," << j;
  }
  const auto fv = round_to(random_values(1030 * 1100, -1, 1, 7), kFloat32);
  const std::vector<double> t = values_of(make_input(fv, {1030, 1100}, kFloat32).t().contiguous());
  for (int64_t i = 0; i < 1100; ++i)
    for (int64_t j = 0; j < 1030; ++j)
      ASSERT_EQ(t[size_t(i * 1030 + j)], fv[size_t(j * 1100 + i)]) << i << "," << j;
}

namespace {
/// Checks x.permute(0, 2, 1, 3).contiguous() of a [B, H, S, D] tensor element by element.
void expect_heads_swapped(const Tensor& x) {
  const int64_t B = x.size(0), H = x.size(1), S = x.size(2), D = x.size(3);
  const std::vector<double> src = values_of(x);
  const std::vector<double> t = values_of(x.permute({0, 2, 1, 3}).contiguous());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          ASSERT_EQ(
              t[size_t(((b * S + s) * H + h) * D + d)], src[size_t(((b * H + h) * S + s) * D + d)])
              << b << "," << s << "," << h << "," << d;
}
}  // namespace

TEST(Copy, CopiesOfShortRowsKeepEveryValue) {
  // Rows contiguous in both tensors but short take the prefetching row copy (Note [Copies of
  // short rows]): the attention-head swap [B, H, S, D] -> [B, S, H, D] in float32 (1,000+
  // rows: several blocks of rows and a last partial one, split over threads), int64, bf16
  // and bool rows, and large ones; a broadcast source; and a column of a matrix (a strided
  // copy of one value per row, which is not a row copy); each checked by its indices.
  const int64_t B = 3, H = 7, S = 53, D = 9;
  const auto v = random_values(B * H * S * D, -100, 100, 8);
  for (DType dtype : {kFloat32, kInt64, kBFloat16, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    expect_heads_swapped(make_input(v, {B, H, S, D}, kFloat64).to(dtype));
  }
  // Past 4 MiB the rows are written with streaming stores (Note [Streaming stores]): rows of
  // 9 floats start anywhere in a 32-byte line, rows of 8 doubles on a line.
  for (const auto& [dtype, depth] :
       {std::pair{kFloat32, int64_t(9)}, std::pair{kFloat64, int64_t(8)}}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = make_input(
        random_values(2 * 16 * 4099 * depth, -100, 100, 11), {2, 16, 4099, depth}, dtype);
    ASSERT_GE(x.nbytes(), size_t(4) << 20);
    expect_heads_swapped(x);
  }
  const Tensor row = make_input(random_values(D, -1, 1, 9), {1, D}, kFloat32);
  const std::vector<double> r = values_of(row), e = values_of(row.expand({40, D}).contiguous());
  for (int64_t i = 0; i < 40 * D; ++i) ASSERT_EQ(e[size_t(i)], r[size_t(i % D)]) << i;
  // A column of a [37, 5] matrix: coalesced to one strided dim, it takes the general walk.
  const Tensor m = make_input(random_values(37 * 5, -1, 1, 10), {37, 5}, kFloat32);
  const std::vector<double> mv = values_of(m);
  const std::vector<double> col = values_of(m.narrow(1, 2, 1).contiguous());
  for (int64_t i = 0; i < 37; ++i) ASSERT_EQ(col[size_t(i)], mv[size_t(i * 5 + 2)]) << i;
}

TEST(Copy, DTypeConversionsMatchCasts) {
  const std::vector<double> vals{-3.7, -1.5, -0.0, 0.0, 0.49, 1.5, 2.5, 255.0, 300.25, 1e5};
  for (DType to : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kInt32, kBool}) {
    SCOPED_TRACE(dtype_name(to));
    auto got = values_of(tensor(vals).to(to));
    for (size_t i = 0; i < vals.size(); ++i) {
      double want;
      switch (to) {
        case kFloat32: want = double(float(vals[i])); break;
        case kBFloat16: want = double(float(BFloat16(float(vals[i])))); break;
        case kFloat16: want = double(float(Half(float(vals[i])))); break;
        case kInt64:
        case kInt32: want = std::trunc(vals[i]); break;  // C++/PyTorch truncate toward zero
        case kBool: want = vals[i] != 0; break;
        default: want = vals[i];
      }
      EXPECT_EQ(got[i], want) << vals[i];
    }
  }
  EXPECT_EQ(values_of(tensor<int64_t>({0, 1, 255}).to(kUInt8)), (std::vector<double>{0, 1, 255}));
  EXPECT_EQ(values_of(tensor<bool>({true, false}).to(kFloat32)), (std::vector<double>{1, 0}));
  Tensor f = ones({2});
  EXPECT_TRUE(f.to(kFloat32).is_same_storage(f));  // no-op conversion shares
  EXPECT_FALSE(f.to(kFloat32, true).is_same_storage(f));
}

TEST(Tensor, ItemAndMetadata) {
  Tensor x = full({2, 3}, 2.5, kFloat64);
  EXPECT_EQ(x.dim(), 2);
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.nbytes(), 48);
  EXPECT_EQ(x[1][2].item<double>(), 2.5);
  EXPECT_THROW_MSG(x.item<double>(), ValueError, "[item] a tensor with 6 elements");
  EXPECT_THROW_MSG(x.data_ptr<float>(), DTypeError, "[data_ptr] requested float32 but the tensor is float64");
  EXPECT_THROW_MSG(x.size(2), IndexError, "[size] dimension 2 is out of range");
  EXPECT_THROW_MSG(Tensor().dim(), ValueError, "undefined tensor");
}

// The device kernels' 32-bit offset path (ElementwisePlan::fits_int32) must see each
// operand's farthest element: here neither numel nor any single dim spans 2^31 elements, but
// the last element lies past 2^31. (Plans only: the view's data is never read.)
TEST(ElementwisePlan, Int32OffsetsOnlyWhenTheFarthestElementFits) {
  Tensor base = empty({1}, kUInt8);
  const int64_t cols = int64_t(1) << 29;
  Tensor far = detail::make_view(base, {2, cols}, {int64_t(7) << 28, 1}, 0);  // 1.75 * 2^30
  EXPECT_FALSE(detail::make_plan({&far}, "test").fits_int32);
  Tensor near = detail::make_view(base, {2, cols}, {cols, 1}, 0);
  EXPECT_TRUE(detail::make_plan({&near}, "test").fits_int32);
}
