// Batch norm and batch_norm_relu on bfloat16 and float16 inputs with float32 weight, bias and
// running statistics (Note [Batch norm on 16-bit inputs]): output, input and residual
// gradients in the input's dtype, parameter gradients and statistics in float32. Checked
// against a float64 reference computed from the 16-bit-rounded inputs (training and eval,
// NCHW and channels-last, each epilogue), running statistics against the float32 path, and
// the fused op against the unfused composition; and the vectorised 16-bit conversions the
// kernels stage their pieces with, bit for bit against the scalar ones.
#include <cmath>
#include <bit>
#include <limits>

#include "cpu/vec_convert.h"
#include "nn/nn_test_helpers.h"

namespace ignis {
namespace {

using namespace ignis::testing;
using kernels::BnEpilogue;
using Vec = std::vector<double>;

struct Case {
  DType dtype;
  bool training, cl;
  BnEpilogue epilogue;
  Shape shape;
  std::string name() const {
    const char* e = epilogue == BnEpilogue::None ? "batch_norm"
                    : epilogue == BnEpilogue::Relu ? "relu" : "add_relu";
    return fmt::format("{} {} {} {} {}", dtype_name(dtype), training ? "train" : "eval",
                       cl ? "channels-last" : "nchw", e, detail::shape_str(shape));
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> r;
  // A spatial plane and a channel row both longer than the kernels' staged pieces (512
  // values), with lengths that are not multiples of the 8-value vector steps (and channel
  // counts, 3 and 520, that leave the bf16 row kernels a partial 16-lane vector); and channels of
  // 20480 values, whose float partial sums (Note [Batch norm on 16-bit inputs]) join their
  // double totals many times: every 256 values per NCHW lane, every 64 channels-last rows,
  // and in two 64 KiB channels-last blocks.
  // BatchNorm1d's [N, C] (no channels-last form) runs the channels-last row walk as well.
  for (const Shape& shape :
       {Shape{2, 3, 23, 25}, Shape{2, 520, 2, 3}, Shape{5, 2, 64, 64}, Shape{300, 21}})
    for (DType dtype : {kBFloat16, kFloat16})
      for (bool training : {true, false})
        for (bool cl : {false, true})
          for (BnEpilogue e : {BnEpilogue::None, BnEpilogue::Relu, BnEpilogue::AddRelu})
            if (!cl || shape.size() == 4) r.push_back({dtype, training, cl, e, shape});
  return r;
}

/// Relative size of one rounding step of dtype's results (half an ulp at 1).
double unit(DType dtype) { return dtype == kBFloat16 ? 1.0 / 256 : 1.0 / 2048; }

double max_abs(const Vec& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

struct Inputs {
  Tensor x, w, b, r, up, rm, rv;  // x, r, up in the case's dtype and layout; the rest float32
};

Inputs make_inputs(const Case& k) {
  const int64_t C = k.shape[1], n = numel_of(k.shape);
  auto data = [&](double lo, double hi, uint64_t seed) {
    return make_nchw(random_values(n, lo, hi, seed), k.shape, k.dtype, k.cl);
  };
  auto param = [&](double lo, double hi, uint64_t seed) {
    return make_input(random_values(C, lo, hi, seed), {C}, kFloat32);
  };
  return {data(-2, 3, 1), param(0.5, 1.5, 2), param(-0.5, 0.5, 3), data(-1, 1, 4),
          data(-1, 1, 5), param(-0.5, 0.5, 6), param(0.5, 2, 7)};
}

/// The op under test on `in` (x and the parameters as leaves that require grad); returns the
/// output, after backward of sum(out * up).
Tensor run(const Case& k, Inputs& in) {
  const Tensor res = k.epilogue == BnEpilogue::AddRelu ? in.r : Tensor();
  if (k.epilogue == BnEpilogue::None)
    return batch_norm(in.x, in.rm, in.rv, in.w, in.b, k.training, 0.1, 1e-5);
  return batch_norm_relu(in.x, in.rm, in.rv, in.w, in.b, k.training, 0.1, 1e-5, res);
}

TEST(BatchNorm16Bit, MatchesAFloat64ReferenceOfTheRoundedInputs) {
  for (const Case& k : all_cases()) {
    SCOPED_TRACE(k.name());
    Inputs in = make_inputs(k);
    for (Tensor* t : {&in.x, &in.w, &in.b, &in.r}) t->requires_grad_();
    const Vec xv = values_of(in.x), wv = values_of(in.w), bv = values_of(in.b),
              rv = values_of(in.r), upv = values_of(in.up), rm0 = values_of(in.rm),
              rv0 = values_of(in.rv);
    const Tensor out = run(k, in);
    (out * in.up).sum().backward();

    ASSERT_EQ(out.dtype(), k.dtype);
    EXPECT_EQ(detail::is_channels_last(out), k.cl);
    const int64_t N = k.shape[0], C = k.shape[1], S = numel_of(k.shape) / (N * C);
    const double count = double(N * S);
    auto at = [&](int64_t n, int64_t c, int64_t s) { return size_t((n * C + c) * S + s); };
    // Reference statistics from the rounded inputs (or the running ones in eval mode).
    Vec mean(static_cast<size_t>(C)), var(static_cast<size_t>(C)), invstd(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      double m = 0, q = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) m += xv[at(n, c, s)];
      m /= count;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) q += (xv[at(n, c, s)] - m) * (xv[at(n, c, s)] - m);
      mean[size_t(c)] = k.training ? m : rm0[size_t(c)];
      var[size_t(c)] = k.training ? q / count : rv0[size_t(c)];
      invstd[size_t(c)] = 1 / std::sqrt(var[size_t(c)] + 1e-5);
      if (k.training) {
        EXPECT_NEAR(values_of(in.rm)[size_t(c)], 0.9 * rm0[size_t(c)] + 0.1 * m, 1e-6);
        EXPECT_NEAR(values_of(in.rv)[size_t(c)], 0.9 * rv0[size_t(c)] + 0.1 * q / (count - 1), 1e-6);
      }
    }
    const Vec got = values_of(out);
    Vec want(got.size()), xhat(got.size()), gm(got.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t s = 0; s < S; ++s) {
          const size_t i = at(n, c, s);
          xhat[i] = (xv[i] - mean[size_t(c)]) * invstd[size_t(c)];
          double y = xhat[i] * wv[size_t(c)] + bv[size_t(c)];
          if (k.epilogue == BnEpilogue::AddRelu) y += rv[i];
          if (k.epilogue != BnEpilogue::None) y = std::max(y, 0.0);
          want[i] = y;
          // The ReLU's gradient follows the op's own output, as relu's backward does.
          gm[i] = k.epilogue == BnEpilogue::None || got[i] > 0 ? upv[i] : 0.0;
        }
    // One rounding of the output (two with a residual: the normalised value is rounded
    // before the add, as the unfused batch_norm's output would be).
    const double u = unit(k.dtype);
    EXPECT_TRUE(all_close(got, want, 2 * u, 2 * u * max_abs(want)));

    Vec gx(got.size()), gw(static_cast<size_t>(C), 0.0), gb(static_cast<size_t>(C), 0.0);
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) {
          gb[size_t(c)] += gm[at(n, c, s)];
          gw[size_t(c)] += gm[at(n, c, s)] * xhat[at(n, c, s)];
        }
      const double keep = k.training ? 1.0 : 0.0, kc = wv[size_t(c)] * invstd[size_t(c)];
      for (int64_t n = 0; n < N; ++n)
        for (int64_t s = 0; s < S; ++s) {
          const size_t i = at(n, c, s);
          gx[i] = kc * (gm[i] - keep * gb[size_t(c)] / count - keep * xhat[i] * gw[size_t(c)] / count);
        }
    }
    ASSERT_EQ(in.x.grad().dtype(), k.dtype);
    EXPECT_EQ(detail::is_channels_last(in.x.grad()), k.cl);
    EXPECT_TRUE(all_close(in.x.grad(), gx, 2 * u, 2 * u * max_abs(gx))) << "grad_input";
    // Parameter gradients are float32 sums in double of exact products: float32 precision,
    // up to the saved statistics' float32 rounding.
    ASSERT_EQ(in.w.grad().dtype(), kFloat32);
    ASSERT_EQ(in.b.grad().dtype(), kFloat32);
    EXPECT_TRUE(all_close(in.w.grad(), gw, 1e-5, 1e-5 * max_abs(gw))) << "grad_weight";
    EXPECT_TRUE(all_close(in.b.grad(), gb, 1e-6, 1e-6 * max_abs(gb))) << "grad_bias";
    if (k.epilogue == BnEpilogue::AddRelu) {
      ASSERT_EQ(in.r.grad().dtype(), k.dtype);
      EXPECT_TRUE(all_close(in.r.grad(), gm, 0, 0)) << "grad_residual";  // exact: g or 0
    }
  }
}

TEST(BatchNorm16Bit, RunningStatisticsEqualTheFloat32Paths) {
  // The same values in float32: the statistics are double sums of the same values (the
  // 16-bit path's short float runs err far below float32's rounding), so the running
  // statistics agree to float32 rounding, and the normalised outputs to one 16-bit rounding:
  // the 16-bit path forms x * scale + shift in float and the float32 path in double, so a
  // value on a 16-bit rounding boundary may round either way.
  for (const Case& k : all_cases()) {
    if (!k.training || k.epilogue != BnEpilogue::None) continue;
    SCOPED_TRACE(k.name());
    Inputs lo = make_inputs(k), hi = make_inputs(k);
    hi.x = make_nchw(values_of(lo.x), k.shape, kFloat32, k.cl);
    const Tensor y16 = run(k, lo), y32 = run(k, hi);
    EXPECT_TRUE(all_close(lo.rm, values_of(hi.rm), 1e-6, 1e-7));
    EXPECT_TRUE(all_close(lo.rv, values_of(hi.rv), 1e-6, 1e-7));
    EXPECT_TRUE(all_close(y16, values_of(y32.to(k.dtype)), 2 * unit(k.dtype), 0));
  }
}

TEST(BatchNorm16Bit, FusedEqualsTheUnfusedComposition) {
  // relu(add(batch_norm(x), r)) rounds batch_norm's output before the add: the fused op
  // rounds at the same point, so the two agree bit for bit, and so do the gradients.
  for (const Case& k : all_cases()) {
    if (k.epilogue != BnEpilogue::AddRelu) continue;
    SCOPED_TRACE(k.name());
    Inputs f = make_inputs(k), p = make_inputs(k);
    for (Inputs* in : {&f, &p})
      for (Tensor* t : {&in->x, &in->w, &in->b, &in->r}) t->requires_grad_();
    const Tensor fused = run(k, f);
    const Tensor plain = relu(add(batch_norm(p.x, p.rm, p.rv, p.w, p.b, k.training, 0.1, 1e-5), p.r));
    EXPECT_TRUE(all_close(fused, values_of(plain), 0, 0));
    (fused * f.up).sum().backward();
    (plain * p.up).sum().backward();
    EXPECT_TRUE(all_close(f.r.grad(), values_of(p.r.grad()), 0, 0));
    const double u = unit(k.dtype);
    EXPECT_TRUE(all_close(f.x.grad(), values_of(p.x.grad()), u, u)) << "grad_input";
    EXPECT_TRUE(all_close(f.w.grad(), values_of(p.w.grad()), 1e-6, 1e-6)) << "grad_weight";
  }
}

TEST(BatchNorm16Bit, ParametersOfAThirdDtypeAreRejected) {
  const Tensor x = random_tensor({2, 3, 4, 4}, -1, 1, 51).to(kBFloat16);
  EXPECT_THROW_MSG(batch_norm(x, Tensor(), Tensor(), ones({3}, kFloat64), Tensor(), true),
                   DTypeError,
                   "[batch_norm] expected weight to have the input's dtype bfloat16 or float32, "
                   "got float64");
  EXPECT_THROW_MSG(batch_norm_relu(x, Tensor(), Tensor(), Tensor(), ones({3}, kFloat16), true,
                                   0.1, 1e-5),
                   DTypeError, "[batch_norm_relu] expected bias to have the input's dtype");
}

/// Floats whose conversion is a corner case (ties, overflow, subnormals, NaNs, infinities)
/// followed by random ones, 8-value steps and a tail.
std::vector<float> conversion_inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v{0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                       -std::numeric_limits<float>::quiet_NaN(), 3.4e38f, -3.4e38f, 65504.0f,
                       65520.0f, 1e-40f, -1e-40f, 6e-8f, 3e-8f};
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x7f800001u, 0xff800001u})
    v.push_back(std::bit_cast<float>(bits));  // bf16 ties to even either way, signalling NaNs
  for (double x : random_values(1000, -70000, 70000, 61)) v.push_back(float(x));
  for (double x : random_values(1003, -1e-3, 1e-3, 62)) v.push_back(float(x));
  return v;
}

template <class T>
void expect_conversions_match_scalar() {
#if !defined(__AVX2__)
  GTEST_SKIP() << "built without AVX2: widen and narrow are the scalar conversions themselves";
#endif
  const std::vector<float> in = conversion_inputs();
  const int64_t n = int64_t(in.size());
  std::vector<T> narrowed(in.size());
  cpu::narrow(in.data(), narrowed.data(), n);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = in[size_t(i)];
    const bool nan = std::isnan(x);
    // A NaN must stay a NaN (its payload may differ), anything else round to the same bits.
    const bool ok = nan ? std::isnan(float(narrowed[size_t(i)]))
                        : narrowed[size_t(i)].bits == T(x).bits;
    if (!ok && ++bad <= 5) ADD_FAILURE() << "narrow(" << x << ") at " << i;
  }
  std::vector<float> widened(in.size());
  cpu::widen(narrowed.data(), widened.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const float want = float(narrowed[size_t(i)]);
    const bool ok = std::isnan(want) ? std::isnan(widened[size_t(i)])
                                     : std::bit_cast<uint32_t>(widened[size_t(i)]) ==
                                           std::bit_cast<uint32_t>(want);
    if (!ok && ++bad <= 10) ADD_FAILURE() << "widen at " << i;
  }
}

TEST(VecConvert, BFloat16MatchesTheScalarConversion) { expect_conversions_match_scalar<BFloat16>(); }
TEST(VecConvert, Float16MatchesTheScalarConversion) { expect_conversions_match_scalar<Half>(); }

}  // namespace
}  // namespace ignis
