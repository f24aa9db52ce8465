// Note [Gradient destinations]: a leaf's first gradient of a backward is written into the
// tensor its autograd meta names (DDP's bucket slice) when, and only when, that gradient then
// becomes grad() unchanged. Each test compares against the same computation without a
// destination (the convolution's gradients themselves are checked against loops in test_nn)
// and checks that the rest of the destination's buffer is untouched.
#include "autograd/node.h"
#include "support/test_support.h"

using namespace ignis;

namespace {

constexpr float kSentinel = -777.f;

Conv2dOptions padded() {
  Conv2dOptions o;
  o.padding = {1, 1};
  return o;
}

/// A buffer of sentinels with room for `numel` elements at offset 5 (a slice that does not
/// start the storage, as a bucket's slices mostly do), and that slice shaped as `sizes`.
struct Bucket {
  Tensor flat;
  Tensor slice;
  Bucket(const Shape& sizes, int64_t numel)
      : flat(full({numel + 9}, kSentinel)), slice(flat.narrow(0, 5, numel).view(sizes)) {}
  /// True when nothing outside the slice was written.
  bool margins_untouched() const {
    Tensor head = flat.narrow(0, 0, 5), tail = flat.narrow(0, flat.numel() - 4, 4);
    return all(head.eq(kSentinel)).item<bool>() && all(tail.eq(kSentinel)).item<bool>();
  }
  bool slice_untouched() const { return all(slice.eq(kSentinel)).item<bool>(); }
};

void set_destination(const Tensor& leaf, const Tensor& dest, double scale = 1) {
  detail::autograd_meta(leaf).grad_destination = {dest, scale};
}

/// An input, a weight w whose destination is `bucket`'s slice, and w_ref, the same weight
/// without a destination (the reference).
struct Case {
  Tensor x, w, w_ref;
  Bucket bucket;
  /// The loss whose gradient the tests compare, through weight w (c.w or c.w_ref).
  Tensor loss(const Tensor& weight) const {
    return conv2d(x, weight, Tensor(), padded()).pow(2).sum();
  }
};

Case make_case(double scale = 1, bool channels_last = false) {
  manual_seed(3);
  const Tensor x = randn({2, 3, 6, 5});
  Tensor w = randn({4, 3, 3, 3});
  if (channels_last) w = w.to(MemoryFormat::channels_last);
  Case c{x, w.clone(MemoryFormat::preserve).requires_grad_(true),
         w.clone(MemoryFormat::preserve).requires_grad_(true), Bucket(w.sizes(), w.numel())};
  set_destination(c.w, c.bucket.slice, scale);
  return c;
}


}  // namespace

TEST(GradientDestination, ConvolutionWritesTheWeightGradientIntoIt) {
  Case c = make_case();
  c.loss(c.w).backward();
  c.loss(c.w_ref).backward();
  EXPECT_EQ(c.w.grad().data_ptr(), c.bucket.slice.data_ptr()) << "the gradient was copied";
  EXPECT_TRUE(equal(c.w.grad(), c.w_ref.grad()));
  EXPECT_TRUE(c.bucket.margins_untouched());
}

// The second backward adds into grad() (now the slice) in place, as without a destination.
TEST(GradientDestination, LaterBackwardsAccumulateIntoTheSameSlice) {
  Case c = make_case();
  for (int i = 0; i < 2; ++i) {
    c.loss(c.w).backward();
    c.loss(c.w_ref).backward();
  }
  EXPECT_EQ(c.w.grad().data_ptr(), c.bucket.slice.data_ptr());
  EXPECT_TRUE(allclose(c.w.grad(), c.w_ref.grad(), 1e-6, 1e-6));
  EXPECT_TRUE(c.bucket.margins_untouched());
}

// A weight used by two convolutions gets two gradients: the first may land in the slice, the
// engine adds the second out of place, and grad() is their sum either way.
TEST(GradientDestination, WeightUsedTwiceGetsTheSum) {
  Case c = make_case();
  auto twice = [&](const Tensor& w) {
    Tensor h = conv2d(c.x, w, Tensor(), padded()).tanh();
    return conv2d(h.narrow(1, 0, 3), w, Tensor(), padded()).pow(2).sum();
  };
  twice(c.w).backward();
  twice(c.w_ref).backward();
  EXPECT_TRUE(allclose(c.w.grad(), c.w_ref.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(c.bucket.margins_untouched());
}

// autograd::grad returns gradients without touching grad(): writing them into the bucket
// would let the next backward overwrite what the caller holds.
TEST(GradientDestination, AutogradGradLeavesItAlone) {
  Case c = make_case();
  const Tensor loss = c.loss(c.w);
  Tensor g = autograd::grad(std::vector<Tensor>{loss}, std::vector<Tensor>{c.w})[0];
  c.loss(c.w_ref).backward();
  EXPECT_TRUE(equal(g, c.w_ref.grad()));
  EXPECT_NE(g.data_ptr(), c.bucket.slice.data_ptr());
  EXPECT_TRUE(c.bucket.slice_untouched());
  EXPECT_FALSE(c.w.grad().defined());
}

// create_graph records the gradient's own history: the kernel's output is not offered.
TEST(GradientDestination, CreateGraphLeavesItAlone) {
  Case c = make_case();
  c.loss(c.w).backward(Tensor(), false, true);
  c.loss(c.w_ref).backward();
  EXPECT_TRUE(c.bucket.slice_untouched());
  EXPECT_TRUE(allclose(c.w.grad(), c.w_ref.grad(), 1e-6, 1e-6));
}

// A leaf that already has grad() accumulates into it; the destination is not used.
TEST(GradientDestination, ExistingGradientIsAddedInto) {
  Case c = make_case();
  c.w.mutable_grad() = ones_like(c.w);
  c.w_ref.mutable_grad() = ones_like(c.w_ref);
  c.loss(c.w).backward();
  c.loss(c.w_ref).backward();
  EXPECT_TRUE(c.bucket.slice_untouched());
  EXPECT_TRUE(equal(c.w.grad(), c.w_ref.grad()));
}

// A channels-last weight's gradient is channels-last (Note [Gradient layout follows the
// leaf]): a contiguous destination does not fit and is left alone.
TEST(GradientDestination, LayoutMismatchLeavesItAlone) {
  Case c = make_case(1, /*channels_last=*/true);
  c.loss(c.w).backward();
  c.loss(c.w_ref).backward();
  EXPECT_TRUE(c.bucket.slice_untouched());
  EXPECT_TRUE(equal(c.w.grad(), c.w_ref.grad()));
  EXPECT_EQ(c.w.grad().strides(), c.w_ref.grad().strides());
}

// The destination's scale multiplies what is written (DDP's 1 / world_size), and a used
// destination is cleared: that tells its owner the gradient arrived written and scaled.
TEST(GradientDestination, ConvolutionAppliesTheScaleAndUsesItUp) {
  Case c = make_case(0.25);
  c.loss(c.w).backward();
  c.loss(c.w_ref).backward();
  EXPECT_EQ(c.w.grad().data_ptr(), c.bucket.slice.data_ptr());
  EXPECT_TRUE(equal(c.w.grad(), c.w_ref.grad() * 0.25));  // a power of two: exact
  EXPECT_FALSE(detail::autograd_meta(c.w).grad_destination.tensor.defined());
}

// A product's gradient goes into the destination when it needs no reduction: with the scale
// folded into a scalar factor, into an elementwise factor's result, or not at all when the
// leaf was broadcast (its gradient is a sum).
TEST(GradientDestination, ProductWritesItsGradientIntoIt) {
  manual_seed(4);
  const Tensor s = randn({1}), q = randn({3, 4});
  for (const bool scalar_factor : {true, false}) {
    SCOPED_TRACE(scalar_factor ? "scalar factor" : "elementwise factor");
    const Tensor other = scalar_factor ? s : q;
    Tensor p = randn({3, 4}).requires_grad_(true);
    Tensor p_ref = p.detach().clone().requires_grad_(true);
    Bucket b(p.sizes(), p.numel());
    set_destination(p, b.slice, 0.5);
    (p * other).tanh().sum().backward();
    (p_ref * other).tanh().sum().backward();
    EXPECT_EQ(p.grad().data_ptr(), b.slice.data_ptr());
    EXPECT_TRUE(allclose(p.grad(), p_ref.grad() * 0.5, 1e-6, 1e-7));
    EXPECT_TRUE(b.margins_untouched());
  }
  Tensor row = randn({1, 4}).requires_grad_(true);
  Tensor row_ref = row.detach().clone().requires_grad_(true);
  Bucket b(row.sizes(), row.numel());
  set_destination(row, b.slice, 0.5);
  (row * q).sum().backward();
  (row_ref * q).sum().backward();
  EXPECT_TRUE(b.slice_untouched());
  EXPECT_TRUE(allclose(row.grad(), row_ref.grad(), 1e-6, 1e-7));
}

// A gradient hook must see the gradient as computed, not scaled into a bucket.
TEST(GradientDestination, LeafWithAHookIsNotOffered) {
  Case c = make_case(0.5);
  Tensor seen;
  c.w.register_hook([&seen](const Tensor& g) {
    seen = g.clone();
    return Tensor();
  });
  c.loss(c.w).backward();
  c.loss(c.w_ref).backward();
  EXPECT_TRUE(c.bucket.slice_untouched());
  EXPECT_TRUE(equal(seen, c.w_ref.grad()));
  EXPECT_TRUE(equal(c.w.grad(), c.w_ref.grad()));
}
