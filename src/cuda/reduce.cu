// CUDA reductions over a ReducePlan (Note [Reduce plan]): every ReduceOp, with the functors
// of reduce_ops.cuh.
//
// Work is split into (output, chunk) units, each reduced by a team of threads: a warp (32)
// when the reduced extent is short, the whole block (256) when it is long. Each thread folds
// the team's elements lane, lane + team, ... (increasing positions, as the functors expect),
// the team combines them with warp shuffles (and shared memory across warps). When there are
// few outputs and many elements each (a full sum), the reduced range is cut into chunks so
// that many blocks work at once; their partial accumulators go to a workspace and a second
// kernel combines them per output.
#include "cuda/launch.cuh"
#include "ignis/ops.h"
#include "cuda/reduce_ops.cuh"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::ReduceArgs;
using ignis::detail::ReduceOp;

template <class A>
__device__ __forceinline__ A shfl_down(const A& a, int delta) {
  constexpr int W = int((sizeof(A) + 3) / 4);
  int w[W] = {};
  memcpy(w, &a, sizeof(A));
#pragma unroll
  for (int k = 0; k < W; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta);
  A r;
  memcpy(&r, w, sizeof(A));
  return r;
}

/// Combines the accumulators of a team (32 or blockDim.x threads); the result is valid in the
/// team's lane 0. Every thread of the block must call it.
template <class Op, class Acc>
__device__ Acc team_reduce(const Op& op, Acc acc, int team) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    const Acc other = shfl_down(acc, d);
    op.combine(acc, other);
  }
  if (team <= 32) return acc;
  __shared__ alignas(16) unsigned char buf[(kThreads / 32) * sizeof(Acc)];
  Acc* warp_acc = reinterpret_cast<Acc*>(buf);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) memcpy(&warp_acc[warp], &acc, sizeof(Acc));
  __syncthreads();
  if (warp == 0) {
    const int nwarps = blockDim.x / 32;
    acc = op.identity();
    if (lane < nwarps) memcpy(&acc, &warp_acc[lane], sizeof(Acc));
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
      const Acc other = shfl_down(acc, d);
      op.combine(acc, other);
    }
  }
  return acc;
}

/// Input and output element offsets of output o (row-major over the kept dims).
__device__ __forceinline__ void kept_offsets(const ReducePlan& p, int64_t o, int64_t& in_off,
                                             int64_t& out_off) {
  in_off = 0;
  out_off = 0;
  for (int d = p.nkept - 1; d >= 0; --d) {
    const int64_t i = o % p.kept_sizes[d];
    o /= p.kept_sizes[d];
    in_off += i * p.kept_strides[d];
    out_off += i * p.out_strides[d];
  }
}

__device__ __forceinline__ int64_t reduced_offset(const ReducePlan& p, int64_t r) {
  if (p.nred == 1) return r * p.red_strides[0];
  int64_t off = 0;
  for (int d = p.nred - 1; d >= 0; --d) {
    off += (r % p.red_sizes[d]) * p.red_strides[d];
    r /= p.red_sizes[d];
  }
  return off;
}

/// Pass 1: unit = output * chunks + chunk. Writes the result, or the partial when chunks > 1.
template <class T, class Op>
__global__ void reduce_units(ReducePlan p, Op op, int team, int64_t chunks, int64_t chunk,
                             typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  const int64_t unit = blockIdx.x * int64_t(blockDim.x / team) + threadIdx.x / team;
  const int lane = threadIdx.x % team;
  const bool active = unit < p.num_outputs * chunks;  // inactive threads still join the team
  Acc acc = op.identity();
  int64_t in_off = 0, out_off = 0;
  if (active) {
    kept_offsets(p, unit / chunks, in_off, out_off);
    const T* in = reinterpret_cast<const T*>(p.in) + in_off;
    const int64_t r0 = (unit % chunks) * chunk;
    const int64_t r1 = r0 + chunk < p.num_reduced ? r0 + chunk : p.num_reduced;
    for (int64_t r = r0 + lane; r < r1; r += team) op.reduce(acc, in[reduced_offset(p, r)], r);
  }
  acc = team_reduce(op, acc, team);
  if (active && lane == 0) {
    if (chunks > 1) partial[unit] = acc;
    else op.write(p, out_off, acc);
  }
}

/// Pass 2: a warp per output combines its chunks' partials and writes the result.
template <class Op>
__global__ void reduce_partials(ReducePlan p, Op op, int64_t chunks,
                                const typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  const int64_t o = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const bool active = o < p.num_outputs;
  Acc acc = op.identity();
  if (active)
    for (int64_t c = lane; c < chunks; c += 32) op.combine(acc, partial[o * chunks + c]);
  acc = team_reduce(op, acc, 32);
  if (active && lane == 0) {
    int64_t in_off, out_off;
    kept_offsets(p, o, in_off, out_off);
    op.write(p, out_off, acc);
  }
}

template <class T, class Op>
void run(const ReducePlan& p, const Op& op) {
  using Acc = typename Op::Acc;
  if (p.num_outputs == 0) return;
  LaunchOn on(p.device);
  const int team = p.num_reduced >= 2048 ? kThreads : 32;
  // Few outputs with long reductions: cut them into chunks of at least 8192 elements so
  // that about 1024 teams work at once.
  int64_t chunks = 1;
  if (p.num_outputs < 1024 && p.num_reduced > 16384) {
    chunks = std::min<int64_t>((1024 + p.num_outputs - 1) / p.num_outputs,
                               (p.num_reduced + 8191) / 8192);
  }
  // At least one element per chunk and one chunk per output (an empty reduction still
  // writes the identity).
  const int64_t chunk = std::max<int64_t>(1, (p.num_reduced + chunks - 1) / chunks);
  chunks = std::max<int64_t>(1, (p.num_reduced + chunk - 1) / chunk);
  Tensor workspace;
  Acc* partial = nullptr;
  if (chunks > 1) {
    // Freed at the end of this call while the kernels may still run: safe, the block is
    // reused only by later work on the same stream (Note [Device caching allocator]).
    workspace = empty({int64_t(p.num_outputs * chunks * int64_t(sizeof(Acc)))},
                      TensorOptions(kUInt8, p.device));
    partial = static_cast<Acc*>(workspace.data_ptr());
  }
  const int64_t units = p.num_outputs * chunks;
  const int64_t teams_per_block = kThreads / team;
  const unsigned blocks = blocks_for_rows(units, teams_per_block, "reduce");
  reduce_units<T, Op><<<blocks, kThreads, 0, on.stream>>>(p, op, team, chunks, chunk, partial);
  IGNIS_CUDA_CHECK_LAUNCH("reduce");
  if (chunks > 1) {
    const unsigned blocks2 = blocks_for_rows(p.num_outputs, kThreads / 32, "reduce");
    reduce_partials<Op><<<blocks2, kThreads, 0, on.stream>>>(p, op, chunks, partial);
    IGNIS_CUDA_CHECK_LAUNCH("reduce");
  }
}

template <class T>
void reduce_floating_only(const ReduceArgs& args) {
  const ReducePlan& p = args.plan;
  switch (args.op) {
    case ReduceOp::Mean: return run<T>(p, SumOp<T, T, true>{p.num_reduced});
    case ReduceOp::Var: return run<T>(p, MomentsOp<T, false>{args.correction});
    case ReduceOp::Std: return run<T>(p, MomentsOp<T, true>{args.correction});
    case ReduceOp::NormL1: return run<T>(p, NormOp<T, NormKind::L1>{});
    case ReduceOp::NormL2: return run<T>(p, NormOp<T, NormKind::L2>{});
    case ReduceOp::NormInf: return run<T>(p, NormOp<T, NormKind::Inf>{});
    case ReduceOp::NormNegInf: return run<T>(p, NormOp<T, NormKind::NegInf>{});
    case ReduceOp::NormL0: return run<T>(p, NormOp<T, NormKind::L0>{});
    case ReduceOp::NormP: return run<T>(p, NormOp<T, NormKind::P>{args.p});
    case ReduceOp::LogSumExp: return run<T>(p, LogSumExpOp<T>{});
    default: return;
  }
}

void reduce_kernel(const ReduceArgs& args) {
  const ReducePlan& p = args.plan;
  visit_dtype(p.in_dtype, [&]<class T>() {
    const bool widened = p.out_dtype != p.in_dtype;
    switch (args.op) {
      case ReduceOp::Sum:
        if constexpr (!is_floating_v<T>)
          if (widened) return run<T>(p, SumOp<T, int64_t, false>{});
        return run<T>(p, SumOp<T, T, false>{});
      case ReduceOp::Prod:
        if constexpr (!is_floating_v<T>)
          if (widened) return run<T>(p, ProdOp<T, int64_t>{});
        return run<T>(p, ProdOp<T, T>{});
      case ReduceOp::Max: return run<T>(p, ExtremeOp<T, true>{});
      case ReduceOp::Min: return run<T>(p, ExtremeOp<T, false>{});
      case ReduceOp::ArgMax: return run<T>(p, ArgExtremeOp<T, true>{});
      case ReduceOp::ArgMin: return run<T>(p, ArgExtremeOp<T, false>{});
      case ReduceOp::All: return run<T>(p, LogicalOp<T, true>{});
      case ReduceOp::Any: return run<T>(p, LogicalOp<T, false>{});
      default:
        if constexpr (is_floating_v<T>) return reduce_floating_only<T>(args);
        else
          throw DTypeError(std::string("[reduce] floating-point reduction given ") +
                           dtype_name(p.in_dtype));
    }
  });
}
}  // namespace

void register_reduce() { ignis::detail::reduce_kernel.set(DeviceType::CUDA, &reduce_kernel); }

}  // namespace ignis::cuda::detail
