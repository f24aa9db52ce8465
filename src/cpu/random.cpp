// CPU kernels of the random family: the distribution fill (any layout, any dtype) and randperm.
// All the math is in kernels/philox.h; this file only walks elements and stores values.
// Element i depends on (seed, offset, i) alone (Note [Philox streams] in src/ops/random.cpp),
// so threads take disjoint index ranges and each computes its own Philox blocks.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "core/tensor_impl.h"
#include "kernels/convert.h"
#include "kernels/philox.h"
#include "ops/random_kernels.h"

namespace ignis::cpu {
namespace {

namespace ph = kernels::philox;
using detail::ElementwisePlan;
using detail::kMaxPlanDims;
using detail::RandomDist;
using detail::RandomFillArgs;
using kernels::convert;

/// Elements per thread below which a fill stays on one thread: a Philox value costs about ten
/// times a copied one, so the grain is a quarter of the elementwise one.
constexpr int64_t kRandomGrain = detail::kGrainSize / 4;

/// Visits the elements of a (possibly strided) plan in flat-index order, starting at `begin`;
/// ptr[op] is the address of the current element of operand op.
class Walker {
 public:
  Walker(const ElementwisePlan& p, int64_t begin) : p_(p) {
    for (int op = 0; op < p.noperands; ++op) item_[op] = itemsize(p.dtypes[op]);
    int64_t rem = begin;
    for (int d = p.ndim - 1; d >= 0; --d) {
      idx_[d] = rem % p.sizes[d];
      rem /= p.sizes[d];
    }
    locate();
  }
  char* ptr[2] = {};
  void next() {
    const int inner = p_.ndim - 1;
    if (inner < 0) return;
    if (++idx_[inner] < p_.sizes[inner]) {
      for (int op = 0; op < p_.noperands; ++op) ptr[op] += p_.strides[op][inner] * item_[op];
      return;
    }
    for (int d = inner; d > 0 && idx_[d] >= p_.sizes[d]; --d) {
      idx_[d] = 0;
      ++idx_[d - 1];
    }
    locate();
  }

 private:
  void locate() {
    for (int op = 0; op < p_.noperands; ++op) {
      int64_t off = 0;
      for (int d = 0; d < p_.ndim; ++d) off += idx_[d] * p_.strides[op][d];
      ptr[op] = p_.data[op] + off * item_[op];
    }
  }
  const ElementwisePlan& p_;
  int64_t idx_[kMaxPlanDims] = {};
  int64_t item_[2] = {};
};

/// Blocks computed together: a fixed trip count the compiler vectorises across blocks
/// (the Philox rounds and the Box–Muller math are branch-free).
constexpr int64_t kBatchBlocks = 16;

/// For each element i of [begin, end): store(i, value i of dist), in increasing i. Blocks are
/// computed kBatchBlocks at a time (a few extra at the end are computed and dropped).
template <class Dist, class V, class Store>
void for_each_value(const Dist& dist, uint64_t seed, uint64_t offset, int64_t begin,
                    int64_t end, Store&& store) {
  constexpr int64_t K = Dist::kPerBlock;
  V vals[kBatchBlocks * K];
  for (int64_t k0 = begin / K; k0 * K < end; k0 += kBatchBlocks) {
#pragma omp simd
    for (int64_t j = 0; j < kBatchBlocks; ++j)
      dist.values(ph::block_words(seed, offset + uint64_t(k0 + j)), vals + j * K);
    const int64_t lo = std::max(begin, k0 * K), hi = std::min(end, (k0 + kBatchBlocks) * K);
    for (int64_t i = lo; i < hi; ++i) store(i, vals[i - k0 * K]);
  }
}

/// Fills operand 0 with dist's values converted by to_out(value, p_ptr) -> T, in parallel.
/// p_ptr is the address of operand 1's element (nullptr when there is none).
template <class T, class V, class Dist, class ToOut>
void fill(const ElementwisePlan& p, const RandomFillArgs& a, const Dist& dist,
          const ToOut& to_out) {
  detail::parallel_for(0, p.numel, kRandomGrain, [&](int64_t begin, int64_t end) {
    if (p.contiguous && p.noperands == 1) {
      T* out = reinterpret_cast<T*>(p.data[0]);
      for_each_value<Dist, V>(dist, a.seed, a.offset, begin, end,
                              [&](int64_t i, V v) { out[i] = to_out(v, nullptr); });
      return;
    }
    Walker w(p, begin);
    for_each_value<Dist, V>(dist, a.seed, a.offset, begin, end, [&](int64_t, V v) {
      *reinterpret_cast<T*>(w.ptr[0]) = to_out(v, w.ptr[1]);
      w.next();
    });
  });
}

template <class T>
void random_fill_typed(const ElementwisePlan& p, const RandomFillArgs& a) {
  if constexpr (kernels::is_floating_v<T>) {
    // Values come in double; storing rounds to nearest. A uniform that rounds up to `to`
    // becomes `from`, so the result stays in [from, to) (as PyTorch's CUDA kernel does).
    const auto uniform_out = [&](double v, const char*) {
      const T r = convert<T>(v);
      return double(convert<double>(r)) >= a.b && a.b > a.a ? convert<T>(a.a) : r;
    };
    if (a.dist == RandomDist::Uniform) {
      if constexpr (std::is_same_v<T, double>) {
        fill<T, double>(p, a, ph::Uniform53{a.a, a.b}, uniform_out);
      } else {
        const int bits = std::is_same_v<T, float> ? 24 : std::is_same_v<T, Half> ? 11 : 8;
        fill<T, double>(p, a, ph::UniformFloat{a.a, a.b, bits}, uniform_out);
      }
      return;
    }
    if (a.dist == RandomDist::Normal) {
      fill<T, double>(p, a, ph::Normal{a.a, a.b},
                      [](double v, const char*) { return convert<T>(v); });
      return;
    }
    if (a.dist == RandomDist::BernoulliTensor) {
      // Operand 1 is p, of the output's dtype (the front end makes it so). NaN p gives 0.
      fill<T, double>(p, a, ph::BernoulliUniform{}, [](double u, const char* pp) {
        return convert<T>(u < double(convert<double>(*reinterpret_cast<const T*>(pp))));
      });
      return;
    }
  }
  if (a.dist == RandomDist::RandInt) {
    fill<T, int64_t>(p, a, ph::RandInt{a.low, a.range},
                     [](int64_t v, const char*) { return convert<T>(v); });
  } else if (a.dist == RandomDist::Bernoulli) {
    const double prob = a.a;
    fill<T, double>(p, a, ph::BernoulliUniform{},
                    [prob](double u, const char*) { return convert<T>(u < prob); });
  }
  // Other (distribution, dtype) pairs are rejected by the front end.
}

void random_fill_kernel(const ElementwisePlan& p, const RandomFillArgs& a) {
  visit_dtype(p.dtypes[0], [&]<class T>() { random_fill_typed<T>(p, a); });
}

/// randperm: keys from PermKey, then the indices in key order. Keys are uniform, so a counting
/// pass on their top bits spreads them over ~n/8 buckets of a few keys each; sorting each
/// bucket by (key, index) then gives exactly the full argsort, in O(n) and in parallel.
void randperm_kernel(const Tensor& out, uint64_t seed, uint64_t offset) {
  const int64_t n = out.numel();
  struct Entry {
    uint64_t key;
    int64_t index;
    bool operator<(const Entry& o) const { return key != o.key ? key < o.key : index < o.index; }
  };
  std::vector<uint64_t> keys(static_cast<size_t>(n));
  detail::parallel_for(0, n, kRandomGrain, [&](int64_t begin, int64_t end) {
    for_each_value<ph::PermKey, uint64_t>(ph::PermKey{}, seed, offset, begin, end,
                                          [&](int64_t i, uint64_t k) { keys[size_t(i)] = k; });
  });
  int bits = 0;  // 2^bits buckets, about n / 8
  while (bits < 24 && (int64_t(8) << bits) < n) ++bits;
  const auto bucket_of = [bits](uint64_t k) { return bits == 0 ? uint64_t(0) : k >> (64 - bits); };
  std::vector<int64_t> start((size_t(1) << bits) + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++start[bucket_of(keys[size_t(i)]) + 1];
  for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
  std::vector<Entry> sorted(static_cast<size_t>(n));
  {
    std::vector<int64_t> fill_pos(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = keys[size_t(i)];
      sorted[size_t(fill_pos[bucket_of(k)]++)] = Entry{k, i};
    }
  }
  const int64_t nbuckets = int64_t(1) << bits;
  detail::parallel_for(0, nbuckets, std::max<int64_t>(1, kRandomGrain / 8), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      std::sort(sorted.begin() + start[size_t(b)], sorted.begin() + start[size_t(b) + 1]);
  });
  visit_dtype(out.dtype(), [&]<class T>() {
    T* o = static_cast<T*>(out.data_ptr());
    detail::parallel_for(0, n, detail::kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) o[j] = convert<T>(sorted[size_t(j)].index);
    });
  });
}

}  // namespace

void register_random_cpu() {
  detail::random_fill_kernel.set(DeviceType::CPU, &random_fill_kernel);
  detail::randperm_kernel.set(DeviceType::CPU, &randperm_kernel);
}

}  // namespace ignis::cpu
