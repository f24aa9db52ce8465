// The CPU kernel of fused elementwise programs (src/ops/fuse_program.h).
//
// Note [Fused blocks]
// The plan's runs are cut into blocks; a block goes through the whole program before the
// next one starts, so every intermediate value lives in a block-sized buffer that stays in L1
// instead of a tensor that travels through memory. Blocks are as long as the buffers allow
// within kL1Budget (each op's call and dispatch cost is paid once per block: on the 10-op
// chain of bench/core_ops, blocks of 256, 1024 and 2048 floats ran 30.7, 25.3 and 24.5 us). Each instruction runs the
// functor of src/kernels over the block in a vectorisable loop (the same functors, so the same
// values, as the single ops). Operands that are constant over a run (program constants, inputs
// broadcast along the innermost dim) are single values: an instruction whose operands are all
// single values runs once per block. Inputs are read in place when they are contiguous in the
// compute dtype, otherwise gathered (and widened) into their buffer. An output in the compute
// dtype is written by its instruction straight into the result; others are stored (and
// narrowed) at the end of the block.
#include <algorithm>
#include <memory>

#include "core/dispatch.h"
#include "cpu/loops.h"
#include "cpu/vec_convert.h"
#include "ops/fuse_program.h"

namespace ignis::cpu {
namespace {

using detail::FusedInstr;
using detail::FusedLaunch;
using detail::FusedPlan;
using detail::FusedProgram;
using kernels::BinaryParams;
using kernels::UnaryParams;
using Kind = FusedInstr::Kind;

constexpr int64_t kL1Budget = 24 << 10;  // bytes of buffers; Zen 4 and most x86 L1d: 32 KiB
constexpr int64_t kMinBlock = 256, kMaxBlock = 4096;

// ---- the functors over a block, by enum --------------------------------------------------------
template <class C>
struct Loops {
  using UnaryBlock = void (*)(C* out, const C* a, int64_t n, const UnaryParams& p);
  using UnaryOne = C (*)(C a, const UnaryParams& p);
  // Operand strides are 1 (a block) or 0 (a single value broadcast over the block).
  using BinaryBlock = void (*)(C* out, const C* a, int64_t sa, const C* b, int64_t sb, int64_t n,
                               const BinaryParams& p);
  using BinaryOne = C (*)(C a, C b, const BinaryParams& p);
  UnaryBlock unary_block[kernels::kNumUnaryOps] = {};
  UnaryOne unary_one[kernels::kNumUnaryOps] = {};
  BinaryBlock binary_block[kernels::kNumBinaryOps] = {};
  BinaryOne binary_one[kernels::kNumBinaryOps] = {};

  template <class Op>
  static void unary(C* out, const C* a, int64_t n, const UnaryParams& p) {
    const auto op = kernels::specialized<C>(kernels::make_unary<Op>(p));
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = C(op(a[i]));
  }
  template <class Op>
  static C unary1(C a, const UnaryParams& p) {
    return C(kernels::make_unary<Op>(p)(a));
  }
  template <class Op>
  static void binary(C* out, const C* a, int64_t sa, const C* b, int64_t sb, int64_t n,
                     const BinaryParams& p) {
    const Op op = kernels::make_binary<Op>(p);
    if (sa == 1 && sb == 1) {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] = C(op(a[i], b[i]));
    } else if (sa == 1) {
      const C y = b[0];
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] = C(op(a[i], y));
    } else {
      const C x = a[0];
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) out[i] = C(op(x, b[i]));
    }
  }
  template <class Op>
  static C binary1(C a, C b, const BinaryParams& p) {
    return C(kernels::make_binary<Op>(p)(a, b));
  }

  Loops() {
    kernels::for_each_type(kernels::UnaryFunctors{}, [&]<class Op>() {
      unary_block[int(Op::id)] = &unary<Op>;
      unary_one[int(Op::id)] = &unary1<Op>;
    });
    kernels::for_each_type(kernels::BinaryFunctors{}, [&]<class Op>() {
      binary_block[int(Op::id)] = &binary<Op>;
      binary_one[int(Op::id)] = &binary1<Op>;
    });
  }
};

template <class C>
const Loops<C>& loops() {
  static const Loops<C> table;
  return table;
}

// ---- loading and storing any dtype ---------------------------------------------------------------
/// d[j] = C(s[j * stride]) for j < n, s of dtype `dtype`.
template <class C>
void gather(C* d, const char* s, DType dtype, int64_t stride, int64_t n) {
  visit_dtype(dtype, [&]<class T>() {
    const T* p = reinterpret_cast<const T*>(s);
    if constexpr (std::is_same_v<C, float> &&
                  (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>)) {
      if (stride == 1) {
        widen(p, d, n);
        return;
      }
    }
    for (int64_t j = 0; j < n; ++j) d[j] = C(kernels::opmath_t<T>(p[j * stride]));
  });
}

/// d[j * stride] = value j of the block (v[j], or u for all j when v is null), narrowed.
template <class C>
void store(char* d, DType dtype, int64_t stride, const C* v, C u, int64_t n) {
  visit_dtype(dtype, [&]<class T>() {
    T* p = reinterpret_cast<T*>(d);
    if constexpr (std::is_same_v<C, float> &&
                  (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>)) {
      if (v && stride == 1) {
        narrow(v, p, n);
        return;
      }
    }
    if (v) {
      for (int64_t j = 0; j < n; ++j) p[j * stride] = T(v[j]);
    } else {
      const T x = T(u);
      for (int64_t j = 0; j < n; ++j) p[j * stride] = x;
    }
  });
}

// ---- one thread's evaluator ----------------------------------------------------------------------
template <class C>
class BlockEvaluator {
 public:
  BlockEvaluator(const FusedProgram& prog, const FusedPlan& plan)
      : prog_(prog),
        plan_(plan),
        nout_(int(prog.outputs.size())),
        block_(std::clamp<int64_t>(kL1Budget / int64_t(sizeof(C)) / std::max(prog.num_slots, 1) / 64 * 64,
                                   kMinBlock, kMaxBlock)),
        buffers_(new C[size_t(std::max(prog.num_slots, 1)) * size_t(block_)]),
        vec_(prog.code.size()),
        one_(prog.code.size()),
        into_(prog.code.size(), -1) {
    // Outputs their instruction writes in place: contiguous, in the compute dtype, computed
    // (not an input or a constant, which the store copies), first of equal outputs. Every run
    // of the plan has the same inner strides (walk_range), so this holds for all of them.
    for (int j = 0; j < nout_; ++j) {
      const size_t o = size_t(prog.outputs[size_t(j)]);
      const Kind kind = prog.code[o].kind;
      const int64_t inner = plan.ndim > 0 ? plan.strides[j][plan.ndim - 1] : 0;
      if (inner == 1 && plan.dtypes[j] == dtype_of<C> && into_[o] < 0 &&
          (kind == Kind::unary || kind == Kind::binary || kind == Kind::where))
        into_[o] = j;
    }
  }

  /// One run of the plan: the operands' addresses and inner strides, n elements.
  void run(char* const* ptrs, const int64_t* strides, int64_t n) {
    for (int64_t off = 0; off < n; off += block_) block(ptrs, strides, off, std::min(block_, n - off));
  }

 private:
  C* buffer(size_t k) { return buffers_.get() + size_t(prog_.slot[k]) * size_t(block_); }
  /// Where instruction k writes its block: the output it is, or its buffer.
  C* target(size_t k, char* const* ptrs, int64_t off) {
    return into_[k] >= 0 ? reinterpret_cast<C*>(ptrs[into_[k]]) + off : buffer(k);
  }

  void block(char* const* ptrs, const int64_t* st, int64_t off, int64_t m) {
    const Loops<C>& L = loops<C>();
    const std::vector<FusedInstr>& code = prog_.code;
    for (size_t k = 0; k < code.size(); ++k) {
      const FusedInstr& in = code[k];
      vec_[k] = nullptr;  // a single value (one_[k]) unless set below
      switch (in.kind) {
        case Kind::input: {
          const int op = nout_ + int(k);
          const DType dt = plan_.dtypes[op];
          const int64_t s = st[op];
          const char* base = ptrs[op] + off * s * itemsize(dt);
          if (s == 0) {
            gather(&one_[k], base, dt, 0, 1);
          } else if (s == 1 && dt == dtype_of<C>) {
            vec_[k] = reinterpret_cast<const C*>(base);
          } else if (prog_.slot[k] >= 0) {
            C* d = buffer(k);
            gather(d, base, dt, s, m);
            vec_[k] = d;
          }
          break;
        }
        case Kind::constant: one_[k] = C(in.value); break;
        case Kind::unary: {
          const size_t a = size_t(in.a);
          if (!vec_[a]) {
            one_[k] = L.unary_one[in.op](one_[a], in.unary_params);
          } else {
            C* d = target(k, ptrs, off);
            L.unary_block[in.op](d, vec_[a], m, in.unary_params);
            vec_[k] = d;
          }
          break;
        }
        case Kind::binary: {
          const size_t a = size_t(in.a), b = size_t(in.b);
          if (!vec_[a] && !vec_[b]) {
            one_[k] = L.binary_one[in.op](one_[a], one_[b], in.binary_params);
          } else {
            C* d = target(k, ptrs, off);
            L.binary_block[in.op](d, vec_[a] ? vec_[a] : &one_[a], vec_[a] ? 1 : 0,
                                  vec_[b] ? vec_[b] : &one_[b], vec_[b] ? 1 : 0, m,
                                  in.binary_params);
            vec_[k] = d;
          }
          break;
        }
        case Kind::where: {
          const size_t c = size_t(in.c), a = size_t(in.a), b = size_t(in.b);
          if (!vec_[c] && !vec_[a] && !vec_[b]) {
            one_[k] = one_[c] != C(0) ? one_[a] : one_[b];
            break;
          }
          const C* pc = vec_[c] ? vec_[c] : &one_[c];
          const C* pa = vec_[a] ? vec_[a] : &one_[a];
          const C* pb = vec_[b] ? vec_[b] : &one_[b];
          const int64_t sc = vec_[c] ? 1 : 0, sa = vec_[a] ? 1 : 0, sb = vec_[b] ? 1 : 0;
          C* d = target(k, ptrs, off);
#pragma omp simd
          for (int64_t j = 0; j < m; ++j) d[j] = pc[j * sc] != C(0) ? pa[j * sa] : pb[j * sb];
          vec_[k] = d;
          break;
        }
      }
    }
    for (int j = 0; j < nout_; ++j) {
      const size_t o = size_t(prog_.outputs[size_t(j)]);
      if (into_[o] == j && vec_[o]) continue;  // written in place
      const DType dt = plan_.dtypes[j];
      store<C>(ptrs[j] + off * st[j] * itemsize(dt), dt, st[j], vec_[o], one_[o], m);
    }
  }

  const FusedProgram& prog_;
  const FusedPlan& plan_;
  const int nout_;
  const int64_t block_;  // elements per block
  std::unique_ptr<C[]> buffers_;
  std::vector<const C*> vec_;  // per instruction: its block, or null for a single value
  std::vector<C> one_;         // per instruction: its single value
  std::vector<int> into_;      // per instruction: the output it writes in place, or -1
};

bool fused_cpu(const FusedLaunch& launch) {
  const FusedPlan& plan = launch.plan;
  const FusedProgram& prog = *launch.program;
  // More arithmetic per element than a single op: split smaller tensors across threads.
  int64_t ops = 0;
  for (const FusedInstr& in : prog.code)
    ops += in.kind == Kind::unary || in.kind == Kind::binary || in.kind == Kind::where;
  const int64_t grain = std::max<int64_t>(kMinBlock, detail::kGrainSize / std::clamp<int64_t>(ops, 1, 8));
  visit_float_or_double(launch.compute, [&]<class C>() {
    detail::parallel_for(0, plan.numel, grain, [&](int64_t begin, int64_t end) {
      BlockEvaluator<C> eval(prog, plan);
      walk_range(plan, begin, end, [&](char* const* ptrs, const int64_t* strides, int64_t n) {
        eval.run(ptrs, strides, n);
      });
    });
  });
  return true;
}

}  // namespace

void register_fuse_cpu() { detail::fused_kernel.set(DeviceType::CPU, &fused_cpu); }

}  // namespace ignis::cpu
