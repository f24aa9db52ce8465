// Running a fused program on tensors (include/ignis/fuse.h): argument checks, the result's
// dtype and shape, the CPU kernel or the op-by-op path, and the autograd node whose backward
// runs the derived gradient program.
#include <algorithm>
#include <mutex>
#include <set>
#include <string>

#include "autograd/record.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/elementwise.h"
#include "ops/fuse_program.h"

namespace ignis::detail {

namespace {
using Kind = FusedInstr::Kind;

/// What a call computes: checked inputs, their broadcast shape, the dtypes.
struct FusedCall {
  Device device;
  Shape shape;
  DType result = kFloat32;   // of every output
  DType compute = kFloat32;  // the arithmetic: float32 or float64
};

FusedCall check_call(const FusedProgram& prog, const std::vector<Tensor>& inputs) {
  const char* name = prog.name.c_str();
  IGNIS_CHECK(int(inputs.size()) == prog.num_inputs, ValueError,
              "[{}] takes {} tensors, got {}", name, prog.num_inputs, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    IGNIS_CHECK(inputs[i].defined(), ValueError, "[{}] input {} is an undefined tensor", name, i);
  FusedCall call;
  call.device = inputs[0].device();
  DType promoted = inputs[0].dtype();
  call.shape = inputs[0].sizes();
  for (size_t i = 1; i < inputs.size(); ++i) {
    IGNIS_CHECK(inputs[i].device() == call.device, DeviceError,
                "[{}] input {} is on {} but input 0 on {}", name, i, inputs[i].device().str(),
                call.device.str());
    promoted = promote_types(promoted, inputs[i].dtype());
    call.shape = broadcast_shape(call.shape, inputs[i].sizes(), name);
  }
  call.result = is_floating(promoted) ? promoted : default_dtype();
  call.compute = call.result == kFloat64 ? kFloat64 : kFloat32;
  return call;
}

/// The program op by op through the ordinary front ends (devices without the fused kernel,
/// programs wider than its plan), outputs in the result dtype. The ops record their own
/// autograd.
std::vector<Tensor> run_op_by_op(const FusedProgram& prog, const std::vector<Tensor>& inputs,
                                 const FusedCall& call) {
  const DType compute = call.compute;
  const Device device = call.device;
  const Shape& shape = call.shape;
  std::vector<Tensor> v(prog.code.size());
  const auto operand = [&](int32_t i) {
    const FusedInstr& in = prog.code[size_t(i)];
    return in.is_constant() ? scalar_like(Scalar(in.value), compute, device) : v[size_t(i)];
  };
  for (size_t k = 0; k < prog.code.size(); ++k) {
    const FusedInstr& in = prog.code[k];
    switch (in.kind) {
      case Kind::input: v[k] = inputs[k].to(compute); break;
      case Kind::constant: break;
      case Kind::unary: {
        const kernels::OpKind kind = unary_kind(in.unary_op());
        v[k] = unary_op(operand(in.a), in.unary_op(), kind, unary_name(in.unary_op()),
                        in.unary_params, nullptr);
        if (kind == kernels::OpKind::Predicate) v[k] = v[k].to(compute);
        break;
      }
      case Kind::binary: {
        const kernels::BinaryKind kind = binary_kind(in.binary_op());
        const Tensor a = operand(in.a), b = operand(in.b);
        v[k] = binary_op(a, b, in.binary_op(), kind, binary_name(in.binary_op()),
                         in.binary_params, nullptr);
        if (kind == kernels::BinaryKind::Compare) v[k] = v[k].to(compute);
        break;
      }
      case Kind::where:
        v[k] = where(ne(operand(in.c), Scalar(0)), operand(in.a), operand(in.b));
        break;
    }
  }
  std::vector<Tensor> outs;
  for (size_t j = 0; j < prog.outputs.size(); ++j) {
    const int32_t o = prog.outputs[j];
    Tensor t = operand(o);
    // Every output has the broadcast shape and storage of its own, as on the fused path: an
    // input, or a value returned twice, is copied.
    const bool repeated =
        std::find(prog.outputs.begin(), prog.outputs.begin() + std::ptrdiff_t(j), o) !=
        prog.outputs.begin() + std::ptrdiff_t(j);
    if (t.sizes() != shape) t = t.expand(shape).contiguous();
    else if (prog.code[size_t(o)].kind == Kind::input || repeated) t = t.clone();
    if (t.dtype() != call.result) t = t.to(call.result);
    outs.push_back(std::move(t));
  }
  return outs;
}

/// A name that outlives every program: graph nodes keep a `const char*` to it, and a node's
/// program may be gone (after backward) when an error message names the node.
const char* interned(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(mutex);
  return names.insert(name).first->c_str();
}

void record_fused(const std::shared_ptr<const FusedProgram>& program,
                  const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  const size_t n = inputs.size();
  std::vector<bool> wanted(n, false);
  for (size_t i = 0; i < n; ++i) wanted[i] = inputs[i].requires_grad();
  // Derived now (once per program and wanted set, then cached), so that only the inputs its
  // formulas read are saved, as the single ops save only what their formulas read.
  std::shared_ptr<const FusedProgram> grad = fused_gradient_program(*program, wanted);
  std::vector<SaveSpec> saved;
  std::vector<std::pair<DType, Device>> placeholders;  // of the inputs not saved
  for (size_t i = 0; i < n; ++i) {
    const bool read = grad && grad->reads_input[i];
    saved.push_back(read ? save(inputs[i]) : SaveSpec{nullptr, false});
    placeholders.emplace_back(inputs[i].dtype(), inputs[i].device());
  }
  record(interned(program->name), outputs, inputs, saved,
         [grad, placeholders](const std::vector<Tensor>& grads, const std::vector<Tensor>& s) {
           std::vector<Tensor> result(s.size());
           if (!grad) return result;  // no wanted input reaches an output
           std::vector<Tensor> args;
           for (size_t i = 0; i < s.size(); ++i)
             // An input the formulas do not read takes part only through its dtype (the
             // output gradients already have the broadcast shape): a 0-dim stand-in.
             args.push_back(s[i].defined() ? s[i]
                                           : scalar_like(Scalar(0), placeholders[i].first,
                                                         placeholders[i].second));
           args.insert(args.end(), grads.begin(), grads.end());
           // Recorded itself when backward runs with create_graph (grad mode on).
           std::vector<Tensor> g = run_fused(grad, args);
           for (size_t j = 0; j < g.size(); ++j)
             result[size_t(grad->gradient_of[j])] = std::move(g[j]);
           return result;
         });
}

}  // namespace

std::vector<Tensor> run_fused_op_by_op(const FusedProgram& prog,
                                       const std::vector<Tensor>& inputs) {
  return run_op_by_op(prog, inputs, check_call(prog, inputs));
}

std::vector<Tensor> run_fused(const std::shared_ptr<const FusedProgram>& program,
                              const std::vector<Tensor>& inputs) {
  const FusedProgram& prog = *program;
  const char* name = prog.name.c_str();
  const FusedCall call = check_call(prog, inputs);
  const Device device = call.device;
  const Shape& shape = call.shape;
  const DType result = call.result, compute = call.compute;
  const size_t noperands = prog.outputs.size() + inputs.size();
  if (!(fused_kernel.has(device.type) && noperands <= size_t(kMaxFusedOperands)))
    return run_op_by_op(prog, inputs, call);

  // Outputs in the layout of the first input of the full shape (channels-last stays so).
  const Tensor* like = nullptr;
  for (const Tensor& t : inputs)
    if (!like && t.sizes() == shape) like = &t;
  std::vector<Tensor> outputs;
  for (size_t j = 0; j < prog.outputs.size(); ++j)
    outputs.push_back(make_tensor_like_layout(shape, result, device, like));
  bool taken = true;
  if (shape_numel(shape) > 0) {
    GradModeScope no_grad(false);  // the expanded views are the kernel's, not the graph's
    std::vector<Tensor> expanded;
    expanded.reserve(inputs.size());
    for (const Tensor& t : inputs) expanded.push_back(t.expand(shape));
    std::vector<const Tensor*> operands;
    for (const Tensor& t : outputs) operands.push_back(&t);
    for (const Tensor& t : expanded) operands.push_back(&t);
    FusedLaunch launch;
    launch.program = &prog;
    launch.plan = make_fused_plan(operands, name);
    launch.compute = compute;
    taken = fused_kernel.get(device)(launch);
  }
  // Not taken (too large for the device's kernel): op by op, outside the no-grad scope, so
  // that the ops record their gradients.
  if (!taken) return run_op_by_op(prog, inputs, call);
  if (needs_grad(inputs)) record_fused(program, inputs, outputs);
  return outputs;
}

}  // namespace ignis::detail
