// The program of a fused elementwise function (include/ignis/fuse.h): straight-line code in
// SSA form over the functors of src/kernels, built by tracing (src/ops/fuse_trace.cpp), run
// by the CPU kernel (src/cpu/fuse.cpp) or op by op (src/ops/fuse.cpp), and differentiated
// into another program (src/ops/fuse_grad.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "ignis/fuse.h"
#include "kernels/binary_ops.h"
#include "kernels/unary_ops.h"

namespace ignis::detail {

struct FusedInstr {
  enum class Kind : uint8_t { input, constant, unary, binary, where };
  Kind kind = Kind::constant;
  uint8_t op = 0;             // a kernels::UnaryOp or kernels::BinaryOp
  int32_t a = -1, b = -1, c = -1;  // operands: indices of earlier instructions
  double value = 0;           // a constant's value (input i is instruction i)
  kernels::UnaryParams unary_params;
  kernels::BinaryParams binary_params;

  bool is_constant() const { return kind == Kind::constant; }
  kernels::UnaryOp unary_op() const { return kernels::UnaryOp(op); }
  kernels::BinaryOp binary_op() const { return kernels::BinaryOp(op); }
};

struct FusedProgram {
  std::string name;
  int num_inputs = 0;
  /// code[i] for i < num_inputs is input i; every operand index is smaller than its user's.
  std::vector<FusedInstr> code;
  std::vector<int32_t> outputs;  // instruction indices, one per output
  /// Filled by finalize_fused_program: the CPU kernel's buffer of each instruction (buffers
  /// are reused once a value is dead) and how many buffers there are.
  std::vector<int32_t> slot;
  int num_slots = 0;

  /// A gradient program's outputs: the forward input each is the gradient of.
  std::vector<int32_t> gradient_of;
  /// A gradient program's use of each forward input: whether some instruction or output
  /// reads it (the forward call saves only those).
  std::vector<bool> reads_input;

  /// Gradient programs already derived, by the set of inputs that want a gradient (null: no
  /// wanted input reaches an output).
  mutable std::mutex grad_mutex;
  mutable std::map<std::vector<bool>, std::shared_ptr<const FusedProgram>> grad_programs;
};

struct FusedTrace {
  FusedProgram program;
  /// Appends an instruction, folding constant operands; returns its index.
  int32_t push(const FusedInstr& instr);
  int32_t constant(double v);
  int32_t unary(kernels::UnaryOp op, int32_t x, const kernels::UnaryParams& p = {});
  int32_t binary(kernels::BinaryOp op, int32_t a, int32_t b, const kernels::BinaryParams& p = {});
  int32_t where(int32_t cond, int32_t a, int32_t b);
};

/// The program computing the gradients of the inputs in `wanted` from the forward inputs
/// followed by one gradient per forward output; one output per wanted input that reaches an
/// output (in input order, named by gradient_of), or null when none does. Derived once per
/// (program, wanted) and kept.
std::shared_ptr<const FusedProgram> fused_gradient_program(const FusedProgram& forward,
                                                           const std::vector<bool>& wanted);

/// The program op by op through the ordinary front ends, as devices without the fused kernel
/// run it (each op records its own autograd); the outputs as run_fused gives them.
std::vector<Tensor> run_fused_op_by_op(const FusedProgram& program,
                                       const std::vector<Tensor>& inputs);

/// The functors on doubles (constant folding) and their traits, looked up by enum.
double apply_unary(kernels::UnaryOp op, double x, const kernels::UnaryParams& p);
double apply_binary(kernels::BinaryOp op, double a, double b, const kernels::BinaryParams& p);
const char* unary_name(kernels::UnaryOp op);
const char* binary_name(kernels::BinaryOp op);
kernels::OpKind unary_kind(kernels::UnaryOp op);
kernels::BinaryKind binary_kind(kernels::BinaryOp op);

/// A device's fused kernel: plan operands are the outputs (of the result dtype, contiguous in
/// plan order), then the inputs (any dtype, any strides); arithmetic in `compute` (float32 or
/// float64). Returns false when it does not take the program (too large for the CUDA kernel's
/// arguments); the caller then runs it op by op.
struct FusedLaunch {
  const FusedProgram* program = nullptr;
  FusedPlan plan;
  DType compute = kFloat32;
};
inline KernelSlot<bool (*)(const FusedLaunch&)> fused_kernel{"fused"};

}  // namespace ignis::detail
