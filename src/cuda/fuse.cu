// The CUDA kernel of fused elementwise programs (src/ops/fuse_program.h).
//
// One thread per element runs the whole program: it loads its inputs (widened to the compute
// type), steps through the instructions with the values in a small per-thread array (the CPU
// kernel's buffer assignment, so values dead at the same time share an entry; indexed at run
// time, it lives in local memory, cached in L1), and stores its outputs. The program travels as a kernel argument in 8 bytes per instruction (read
// through the constant cache, the same instruction for every thread of a warp), each
// instruction dispatching to the functors of src/kernels through a switch over the functor
// list. So the intermediate values never reach device memory, as in the CPU kernel's L1 blocks.
// Programs too large for the argument (kMaxInstrs, kMaxValues, kMaxRegisters, kMaxOperands)
// return false and run op by op.
#include "cuda/launch.cuh"
#include "ops/fuse_program.h"

namespace ignis::cuda::detail {
namespace {

using ignis::detail::FusedInstr;
using ignis::detail::FusedLaunch;
using ignis::detail::FusedPlan;
using ignis::detail::FusedProgram;
using kernels::BinaryParams;
using kernels::UnaryParams;

// Sized so that the program and the offsets stay under the classic 4 KiB of kernel arguments.
constexpr int kMaxInstrs = 160;
constexpr int kMaxValues = 64;
constexpr int kMaxOperands = 12;
constexpr int kMaxRegisters = 32;
constexpr uint8_t kNoParams = 255;

/// An instruction in 8 bytes; its numbers (a constant's value, a unary op's two parameters, a
/// binary op's alpha) in DeviceProgram::values. Inputs are instructions 0 .. inputs-1.
struct DeviceInstr {
  uint8_t kind = 0;
  uint8_t op = 0;
  uint8_t a = 0, b = 0, c = 0;  // operand instructions
  uint8_t reg = 0;              // the register it writes (not for constants)
  uint8_t param = kNoParams;    // its first number in values, or none (the defaults)
  uint8_t flags = 0;            // a unary op's has_a (bit 0) and has_b (bit 1)
};

struct DeviceProgram {
  int ninstr = 0, nout = 0;
  DeviceInstr code[kMaxInstrs];
  double values[kMaxValues] = {};
  uint8_t outputs[kMaxOperands] = {};
  DType dtypes[kMaxOperands] = {};  // of the plan's operands: outputs, then inputs
  char* data[kMaxOperands] = {};
};

constexpr uint8_t kind_of(FusedInstr::Kind k) { return uint8_t(k); }

template <class C, class... Ops>
__device__ C unary_by_id(kernels::TypeList<Ops...>, uint8_t op, C x, const UnaryParams& p) {
  C r = C(0);
  ((uint8_t(Ops::id) == op ? (void)(r = C(kernels::make_unary<Ops>(p)(x))) : (void)0), ...);
  return r;
}

template <class C, class... Ops>
__device__ C binary_by_id(kernels::TypeList<Ops...>, uint8_t op, C a, C b, const BinaryParams& p) {
  C r = C(0);
  ((uint8_t(Ops::id) == op ? (void)(r = C(kernels::make_binary<Ops>(p)(a, b))) : (void)0), ...);
  return r;
}

template <class C>
__device__ C load(const char* base, int64_t off, DType dt) {
  switch (dt) {
    case DType::Float32: return C(reinterpret_cast<const float*>(base)[off]);
    case DType::Float64: return C(reinterpret_cast<const double*>(base)[off]);
    case DType::BFloat16: return C(float(reinterpret_cast<const BFloat16*>(base)[off]));
    case DType::Float16: return C(float(reinterpret_cast<const Half*>(base)[off]));
    case DType::Int64: return C(reinterpret_cast<const int64_t*>(base)[off]);
    case DType::Int32: return C(reinterpret_cast<const int32_t*>(base)[off]);
    case DType::UInt8: return C(reinterpret_cast<const uint8_t*>(base)[off]);
    case DType::Bool: return C(reinterpret_cast<const bool*>(base)[off] ? 1 : 0);
  }
  return C(0);
}

/// Outputs have the result dtype: float32, float64, bf16 or fp16.
template <class C>
__device__ void store(char* base, int64_t off, DType dt, C v) {
  switch (dt) {
    case DType::Float32: reinterpret_cast<float*>(base)[off] = float(v); break;
    case DType::Float64: reinterpret_cast<double*>(base)[off] = double(v); break;
    case DType::BFloat16: reinterpret_cast<BFloat16*>(base)[off] = BFloat16(float(v)); break;
    case DType::Float16: reinterpret_cast<Half*>(base)[off] = Half(float(v)); break;
    default: break;
  }
}

template <class C, class I>
__global__ void fused_kernel(int64_t n, DeviceProgram prog, Offsets<I, kMaxOperands> offs) {
  using Kind = FusedInstr::Kind;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  // Indexed at run time, so in local memory (cached in L1) rather than in registers.
  C reg[kMaxRegisters] = {};  // every register is written before it is read
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    I off[kMaxOperands];
    offs.at(I(i), off);
    const auto value = [&](int j) {
      const DeviceInstr& in = prog.code[j];
      return in.kind == kind_of(Kind::constant) ? C(prog.values[in.param]) : reg[in.reg];
    };
    for (int k = 0; k < prog.ninstr; ++k) {
      const DeviceInstr& in = prog.code[k];
      switch (Kind(in.kind)) {
        case Kind::input: {
          const int op = prog.nout + k;
          reg[in.reg] = load<C>(prog.data[op], int64_t(off[op]), prog.dtypes[op]);
          break;
        }
        case Kind::constant: break;
        case Kind::unary: {
          UnaryParams p;
          if (in.param != kNoParams) {
            p.a = prog.values[in.param];
            p.b = prog.values[in.param + 1];
            p.has_a = in.flags & 1;
            p.has_b = in.flags & 2;
          }
          reg[in.reg] = unary_by_id(kernels::UnaryFunctors{}, in.op, value(in.a), p);
          break;
        }
        case Kind::binary: {
          BinaryParams p;
          if (in.param != kNoParams) p.alpha = prog.values[in.param];
          reg[in.reg] = binary_by_id(kernels::BinaryFunctors{}, in.op, value(in.a), value(in.b), p);
          break;
        }
        case Kind::where:
          reg[in.reg] = value(in.c) != C(0) ? value(in.a) : value(in.b);
          break;
      }
    }
    for (int j = 0; j < prog.nout; ++j)
      store<C>(prog.data[j], int64_t(off[j]), prog.dtypes[j], value(prog.outputs[j]));
  }
}

// The classic limit of a kernel's arguments (larger ones need CUDA 12.1 and a recent driver).
static_assert(sizeof(int64_t) + sizeof(DeviceProgram) + sizeof(Offsets<int64_t, kMaxOperands>) <=
              4096);

bool fused_cuda(const FusedLaunch& launch) {
  const FusedProgram& prog = *launch.program;
  const FusedPlan& plan = launch.plan;
  using Kind = FusedInstr::Kind;
  if (int(prog.code.size()) > kMaxInstrs || plan.noperands > kMaxOperands ||
      prog.num_slots > kMaxRegisters)
    return false;
  DeviceProgram d;
  d.ninstr = int(prog.code.size());
  d.nout = int(prog.outputs.size());
  int nvalues = 0;
  const auto add_values = [&](std::initializer_list<double> v) {
    if (nvalues + int(v.size()) > kMaxValues) return false;
    for (double x : v) d.values[nvalues++] = x;
    return true;
  };
  for (size_t k = 0; k < prog.code.size(); ++k) {
    const FusedInstr& in = prog.code[k];
    DeviceInstr& o = d.code[k];
    o.kind = kind_of(in.kind);
    o.op = in.op;
    o.a = uint8_t(std::max(in.a, 0));
    o.b = uint8_t(std::max(in.b, 0));
    o.c = uint8_t(std::max(in.c, 0));
    o.reg = uint8_t(std::max(prog.slot[k], 0));
    const int first = nvalues;
    bool fits = true;
    if (in.kind == Kind::constant) {
      fits = add_values({in.value});
    } else if (in.kind == Kind::unary) {
      const UnaryParams& p = in.unary_params;
      if (p.has_a || p.has_b || p.a != 0 || p.b != 0) {
        fits = add_values({p.a, p.b});
        o.flags = uint8_t((p.has_a ? 1 : 0) | (p.has_b ? 2 : 0));
      }
    } else if (in.kind == Kind::binary && in.binary_params.alpha != 1) {
      fits = add_values({in.binary_params.alpha});
    }
    if (!fits) return false;
    if (nvalues > first) o.param = uint8_t(first);
    // An input nobody reads has no register (src/ops/fuse_trace.cpp): not loaded.
    if (in.kind == Kind::input && prog.slot[k] < 0) {
      o.kind = kind_of(Kind::constant);
      o.param = 0;  // never read
    }
  }
  for (int j = 0; j < d.nout; ++j) d.outputs[j] = uint8_t(prog.outputs[size_t(j)]);
  for (int k = 0; k < plan.noperands; ++k) {
    d.dtypes[k] = plan.dtypes[k];
    d.data[k] = plan.data[k];
  }
  if (plan.numel == 0) return true;
  LaunchOn on(plan.device);
  const auto run = [&]<class C>() {
    if (plan.fits_int32)
      fused_kernel<C, int32_t><<<grid_for(plan.numel), kThreads, 0, on.stream>>>(
          plan.numel, d, make_offsets<int32_t, kMaxOperands>(plan));
    else
      fused_kernel<C, int64_t><<<grid_for(plan.numel), kThreads, 0, on.stream>>>(
          plan.numel, d, make_offsets<int64_t, kMaxOperands>(plan));
  };
  if (launch.compute == kFloat64) run.template operator()<double>();
  else run.template operator()<float>();
  IGNIS_CUDA_CHECK_LAUNCH("fused");
  return true;
}

}  // namespace

void register_fuse() { ignis::detail::fused_kernel.set(DeviceType::CUDA, &fused_cuda); }

}  // namespace ignis::cuda::detail
