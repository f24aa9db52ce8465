// Random tensors: the default generator, rand/randn/randint/bernoulli/randperm and the in-place
// uniform_/normal_/bernoulli_. This file does generator handling and argument checks only;
// the values come from src/kernels/philox.h through the random kernel slots.
//
// Note [Philox streams]
// ---------------------
// Every draw is a pure function of (seed, offset, i), with no state shared between elements:
// - Philox 4x32-10 (Random123) keyed by the 64-bit seed split in two 32-bit words (low first).
// - A Generator is a (seed, offset) pair. A call that needs n values of a distribution that
//   yields K values per Philox block reserves ceil(n / K) blocks by advancing the offset
//   (Generator::advance), and value i comes from lane i % K of block (offset + i / K); the
//   block index is the low 64 bits of the 128-bit counter, the high 64 bits are zero.
// - i is the row-major index in the output's logical shape, whatever its strides: uniform_ on
//   a transposed view gives the values rand() gives for a contiguous tensor of that shape.
// - K per distribution (kernels/philox.h): uniform 4 for float32/bfloat16/float16 (one word
//   each: 24 bits for float32, the significand width 8/11 for bfloat16/float16 so u is exact
//   in the output type and never rounds up to 1) and 2 for float64 (53 bits from two words);
//   normal 2 (Box–Muller in double from two 53-bit uniforms, rounded to the output dtype);
//   randint 2 (64-bit draw, Lemire's multiply-shift: bias < range / 2^64); bernoulli 2 (a
//   53-bit uniform compared with p); randperm 2 (argsort of 64-bit keys, ties by index —
//   deterministic and parallel, also as a GPU radix sort).
// - Box–Muller uses philox.h's own log, sqrt and sin/cos (+, *, / and bit operations, within
//   2 ulp of libm), so no libm is involved and the CPU loop vectorises.
// Consequences: any split of the work across threads or GPU blocks gives the same values, the
// CPU and CUDA kernels agree bit for bit (normal values too: both kernels are built without
// FMA contraction, src/cpu/random.cpp with -ffp-contract=off and src/cuda/random.cu with
// --fmad=false, as a * b + c fused on one side only differs in the last bit), rand({10})
// equals the first 10 values of rand({1000}) drawn from the same state, and set_offset()
// replays a draw. The default generator is locked by a mutex while a call reads
// its seed and advances it; a Generator passed by the caller is not locked (its owner
// serialises its use across threads).
#include <limits>
#include <mutex>

#include "core/graph_capture.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "kernels/philox.h"
#include "ops/random_kernels.h"
#include "ops/write_checks.h"

namespace ignis {

using namespace detail;

namespace {

/// PyTorch's default seed, so a program that never seeds still gets a fixed stream.
constexpr uint64_t kDefaultSeed = 67280421310721ull;

std::mutex& default_generator_mutex() {
  static std::mutex m;
  return m;
}

struct Reservation {
  uint64_t seed, offset;
};

/// Reserves `blocks` Philox blocks from gen, or from the default generator under its mutex,
/// for op's kernel on `device`. The (seed, offset) pair becomes a launch argument, so a device
/// op refuses a CUDA graph capture: every replay would repeat the same numbers.
Reservation reserve(Generator* gen, uint64_t blocks, Device device, const char* op) {
  if (!device.is_cpu())
    refuse_during_capture(op, "draws random numbers whose Philox offset is fixed at capture");
  Generator& def = default_generator();
  if (gen == nullptr || gen == &def) {
    std::lock_guard<std::mutex> lock(default_generator_mutex());
    return {def.seed(), def.advance(blocks)};
  }
  return {gen->seed(), gen->advance(blocks)};
}

/// Runs the fill kernel over `out` (operands: out, then p for BernoulliTensor).
void random_fill(Tensor& out, RandomFillArgs args, Generator* gen, const char* op,
                 const Tensor* p = nullptr) {
  check_writable_layout(out, op);
  if (out.numel() == 0) return;
  const Reservation r = reserve(gen,
                                kernels::philox::blocks_for(
                                    uint64_t(out.numel()),
                                    random_values_per_block(args.dist, out.dtype())),
                                out.device(), "random");
  args.seed = r.seed;
  args.offset = r.offset;
  const ElementwisePlan plan = p ? make_plan({&out, p}, op) : make_plan({&out}, op);
  random_fill_kernel.get(out.device())(plan, args);
}

void check_floating(DType t, const char* op) {
  IGNIS_CHECK(is_floating(t), DTypeError, "[{}] expects a floating dtype, got {}", op,
              dtype_name(t));
}

/// Significand bits of a float dtype (including the implicit one): the largest run of
/// consecutive integers it holds exactly is [-2^digits, 2^digits].
int float_digits(DType t) {
  switch (t) {
    case DType::Float64: return 53;
    case DType::Float32: return 24;
    case DType::Float16: return 11;
    case DType::BFloat16: return 8;
    default: return 0;
  }
}

/// The smallest and largest integer dtype t stores (exactly, for floats).
std::pair<int64_t, int64_t> integer_bounds(DType t) {
  switch (t) {
    case DType::Int64:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    case DType::Int32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::UInt8: return {0, 255};
    case DType::Bool: return {0, 1};
    default: {
      const int d = std::min(float_digits(t), 62);
      return {-(int64_t(1) << d), int64_t(1) << d};
    }
  }
}

}  // namespace

int detail::random_values_per_block(RandomDist dist, DType dtype) {
  namespace ph = kernels::philox;
  switch (dist) {
    case RandomDist::Uniform:
      return dtype == kFloat64 ? ph::Uniform53::kPerBlock : ph::UniformFloat::kPerBlock;
    case RandomDist::Normal: return ph::Normal::kPerBlock;
    case RandomDist::RandInt: return ph::RandInt::kPerBlock;
    case RandomDist::Bernoulli:
    case RandomDist::BernoulliTensor: return ph::BernoulliUniform::kPerBlock;
  }
  return 1;
}

Generator& default_generator() {
  static Generator gen(kDefaultSeed);
  return gen;
}

void manual_seed(uint64_t seed) {
  Generator& def = default_generator();
  std::lock_guard<std::mutex> lock(default_generator_mutex());
  def.manual_seed(seed);
}

namespace {
/// opts with dtype t (device and memory format as the caller gave them).
TensorOptions with_dtype(TensorOptions opts, DType t) {
  opts.dtype = t;
  return opts;
}
}  // namespace

Tensor rand(const Shape& shape, TensorOptions opts, Generator* gen) {
  const DType t = opts.dtype_or(default_dtype());
  check_floating(t, "rand");
  return empty(shape, with_dtype(opts, t)).uniform_(0, 1, gen);
}

Tensor randn(const Shape& shape, TensorOptions opts, Generator* gen) {
  const DType t = opts.dtype_or(default_dtype());
  check_floating(t, "randn");
  return empty(shape, with_dtype(opts, t)).normal_(0, 1, gen);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts,
               Generator* gen) {
  IGNIS_CHECK(low < high, ValueError, "[randint] low must be less than high, got low={} >= high={}",
              low, high);
  const DType t = opts.dtype_or(kInt64);
  const auto [lo, hi] = integer_bounds(t);
  IGNIS_CHECK(low >= lo && high - 1 <= hi, ValueError,
              "[randint] range [{}, {}) does not fit in {}, which holds the integers [{}, {}]{}",
              low, high, dtype_name(t), lo, hi,
              is_floating(t) ? " exactly" : "");
  Tensor out = empty(shape, with_dtype(opts, t));
  RandomFillArgs args;
  args.dist = RandomDist::RandInt;
  args.low = low;
  args.range = uint64_t(high) - uint64_t(low);  // wraps correctly for any low < high
  random_fill(out, args, gen, "randint");
  return out;
}

Tensor bernoulli(const Tensor& p, Generator* gen) {
  IGNIS_CHECK(p.defined(), ValueError, "[bernoulli] undefined tensor");
  check_floating(p.dtype(), "bernoulli");
  Tensor out = empty(p.sizes(), TensorOptions(p.dtype(), p.device()));
  RandomFillArgs args;
  args.dist = RandomDist::BernoulliTensor;
  random_fill(out, args, gen, "bernoulli", &p);
  return out;
}

Tensor randperm(int64_t n, TensorOptions opts, Generator* gen) {
  IGNIS_CHECK(n >= 0, ValueError, "[randperm] n must be non-negative, got {}", n);
  const DType t = opts.dtype_or(kInt64);
  IGNIS_CHECK(t != kBool, DTypeError, "[randperm] bool cannot hold a permutation");
  IGNIS_CHECK(n == 0 || n - 1 <= integer_bounds(t).second, ValueError,
              "[randperm] n={} is too large for {} (largest value {})", n, dtype_name(t),
              integer_bounds(t).second);
  const Device device = opts.device_or(Device::cpu());
  Tensor out = empty({n}, TensorOptions(t, device));
  if (n == 0) return out;
  const Reservation r =
      reserve(gen, kernels::philox::blocks_for(uint64_t(n), kernels::philox::PermKey::kPerBlock),
              device, "randperm");
  randperm_kernel.get(device)(out, r.seed, r.offset);
  return out;
}

}  // namespace ignis

namespace ignis {

Tensor& Tensor::uniform_(double from, double to, Generator* gen) {
  check_floating(dtype(), "uniform_");
  IGNIS_CHECK(std::isfinite(to - from) && from <= to, ValueError,
              "[uniform_] expects finite bounds with from <= to, got from={} and to={}", from,
              to);
  RandomFillArgs args;
  args.dist = RandomDist::Uniform;
  args.a = from;
  args.b = to;
  random_fill(*this, args, gen, "uniform_");
  return *this;
}

Tensor& Tensor::normal_(double mean, double std, Generator* gen) {
  check_floating(dtype(), "normal_");
  IGNIS_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0, ValueError,
              "[normal_] expects a finite mean and std >= 0, got mean={} and std={}", mean, std);
  RandomFillArgs args;
  args.dist = RandomDist::Normal;
  args.a = mean;
  args.b = std;
  random_fill(*this, args, gen, "normal_");
  return *this;
}

Tensor& Tensor::bernoulli_(double p, Generator* gen) {
  IGNIS_CHECK(p >= 0 && p <= 1, ValueError, "[bernoulli_] expects p in [0, 1], got p={}", p);
  RandomFillArgs args;
  args.dist = RandomDist::Bernoulli;
  args.a = p;
  random_fill(*this, args, gen, "bernoulli_");
  return *this;
}

}  // namespace ignis
