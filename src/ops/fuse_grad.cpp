// The gradient of a fused program, as another fused program (reverse mode on its SSA code).
// Each op's derivative is the formula the single op records (src/ops/elementwise_grad.cpp),
// written in program instructions, so a fused function's gradients are the eager ones. The
// forward code is replayed first; what the gradients do not read is dropped by
// end_fused_trace.
#include "core/error.h"
#include "ops/fuse_program.h"

namespace ignis::detail {

using kernels::BinaryOp;
using kernels::UnaryOp;
using Kind = FusedInstr::Kind;

namespace {

struct GradientBuilder {
  explicit GradientBuilder(FusedTrace& trace) : t(trace) {}
  FusedTrace& t;
  std::vector<int32_t> value;    // forward instruction -> its index in the new program
  std::vector<int32_t> adjoint;  // forward instruction -> its gradient's index, -1: zero

  int32_t c(double v) { return t.constant(v); }
  int32_t un(UnaryOp op, int32_t x, const kernels::UnaryParams& p = {}) { return t.unary(op, x, p); }
  int32_t bin(BinaryOp op, int32_t a, int32_t b) { return t.binary(op, a, b); }
  int32_t mul(int32_t a, int32_t b) { return bin(BinaryOp::mul, a, b); }
  int32_t div(int32_t a, int32_t b) { return bin(BinaryOp::div, a, b); }
  int32_t add(int32_t a, int32_t b) { return bin(BinaryOp::add, a, b); }
  int32_t sub(int32_t a, int32_t b) { return bin(BinaryOp::sub, a, b); }
  int32_t neg(int32_t a) { return un(UnaryOp::neg, a); }
  int32_t select(int32_t cond, int32_t a, int32_t b) { return t.where(cond, a, b); }

  void accumulate(int32_t forward_index, int32_t g) {
    int32_t& adj = adjoint[size_t(forward_index)];
    adj = adj < 0 ? g : add(adj, g);
  }

  // The gradient of one forward instruction k, given g = its adjoint.
  void backprop(const FusedInstr& in, int32_t k, int32_t g) {
    const int32_t out = value[size_t(k)];
    const int32_t x = in.a >= 0 ? value[size_t(in.a)] : -1;
    const int32_t y = in.b >= 0 ? value[size_t(in.b)] : -1;
    switch (in.kind) {
      case Kind::unary: return backprop_unary(in, g, x, out);
      case Kind::binary: return backprop_binary(in, g, x, y, out);
      case Kind::where: {
        const int32_t cond = value[size_t(in.c)];
        const int32_t zero = c(0);
        accumulate(in.a, select(cond, g, zero));
        accumulate(in.b, select(cond, zero, g));
        return;
      }
      default: return;
    }
  }

  void backprop_unary(const FusedInstr& in, int32_t g, int32_t x, int32_t out) {
    const kernels::UnaryParams& p = in.unary_params;
    int32_t gx = -1;
    switch (in.unary_op()) {
      case UnaryOp::neg: gx = neg(g); break;
      case UnaryOp::abs: gx = mul(g, un(UnaryOp::sign, x)); break;
      case UnaryOp::relu: gx = bin(BinaryOp::relu_backward, g, out); break;
      case UnaryOp::clamp: {
        int32_t keep = c(1);
        if (p.has_a) keep = bin(BinaryOp::logical_and, keep, bin(BinaryOp::ge, x, c(p.a)));
        if (p.has_b) keep = bin(BinaryOp::logical_and, keep, bin(BinaryOp::le, x, c(p.b)));
        gx = select(keep, g, c(0));
        break;
      }
      case UnaryOp::exp: gx = mul(g, out); break;
      case UnaryOp::log: gx = div(g, x); break;
      case UnaryOp::log1p: gx = div(g, add(x, c(1))); break;
      case UnaryOp::expm1: gx = mul(g, add(out, c(1))); break;
      case UnaryOp::sqrt: gx = div(g, mul(out, c(2))); break;
      case UnaryOp::rsqrt: gx = mul(mul(g, bin(BinaryOp::pow, out, c(3))), c(-0.5)); break;
      case UnaryOp::sin: gx = mul(g, un(UnaryOp::cos, x)); break;
      case UnaryOp::cos: gx = neg(mul(g, un(UnaryOp::sin, x))); break;
      case UnaryOp::tanh: gx = mul(g, sub(c(1), mul(out, out))); break;
      case UnaryOp::sigmoid: gx = mul(g, mul(out, sub(c(1), out))); break;
      case UnaryOp::gelu: gx = mul(g, un(UnaryOp::gelu_grad, x)); break;
      case UnaryOp::gelu_tanh: gx = mul(g, un(UnaryOp::gelu_tanh_grad, x)); break;
      case UnaryOp::silu: {
        const int32_t s = un(UnaryOp::sigmoid, x);
        gx = mul(g, mul(s, add(mul(x, sub(c(1), s)), c(1))));
        break;
      }
      case UnaryOp::softplus: {
        const int32_t bx = mul(x, c(p.a));
        gx = select(bin(BinaryOp::gt, bx, c(p.b)), g, mul(g, un(UnaryOp::sigmoid, bx)));
        break;
      }
      case UnaryOp::reciprocal: gx = neg(mul(g, mul(out, out))); break;
      default: return;  // sign, predicates, derivative functors: no gradient (as eager)
    }
    accumulate(in.a, gx);
  }

  void backprop_binary(const FusedInstr& in, int32_t g, int32_t a, int32_t b, int32_t out) {
    const double alpha = in.binary_params.alpha;
    switch (in.binary_op()) {
      case BinaryOp::add:
        accumulate(in.a, g);
        accumulate(in.b, alpha == 1 ? g : mul(g, c(alpha)));
        return;
      case BinaryOp::sub:
        accumulate(in.a, g);
        accumulate(in.b, mul(g, c(-alpha)));
        return;
      case BinaryOp::mul:
        accumulate(in.a, mul(g, b));
        accumulate(in.b, mul(g, a));
        return;
      case BinaryOp::div: {
        const int32_t ga = div(g, b);
        accumulate(in.a, ga);
        accumulate(in.b, neg(mul(ga, div(a, b))));
        return;
      }
      case BinaryOp::pow: {
        const int32_t zero = c(0);
        int32_t ga = mul(g, mul(b, bin(BinaryOp::pow, a, sub(b, c(1)))));
        accumulate(in.a, select(bin(BinaryOp::eq, b, zero), zero, ga));
        // d/de base^e = base^e log(base), taken as 0 where base == 0 and e >= 0.
        const int32_t gb = mul(g, mul(out, un(UnaryOp::log, a)));
        const int32_t base0 =
            bin(BinaryOp::logical_and, bin(BinaryOp::eq, a, zero), bin(BinaryOp::ge, b, zero));
        accumulate(in.b, select(base0, zero, gb));
        return;
      }
      case BinaryOp::maximum:
      case BinaryOp::minimum: {
        // Ties split the gradient in half, as PyTorch.
        const bool is_max = in.binary_op() == BinaryOp::maximum;
        const int32_t zero = c(0);
        const int32_t tie = bin(BinaryOp::eq, a, b);
        const int32_t a_wins = bin(is_max ? BinaryOp::gt : BinaryOp::lt, a, b);
        const int32_t half = mul(g, c(0.5));
        accumulate(in.a, select(tie, half, select(a_wins, g, zero)));
        accumulate(in.b, select(tie, half, select(a_wins, zero, g)));
        return;
      }
      case BinaryOp::relu_backward:  // linear in the gradient; the mask has none
        accumulate(in.a, bin(BinaryOp::relu_backward, g, b));
        return;
      default: return;  // comparisons, logic, floor/trunc division: no gradient
    }
  }
};

}  // namespace

std::shared_ptr<const FusedProgram> fused_gradient_program(const FusedProgram& fwd,
                                                           const std::vector<bool>& wanted) {
  {
    std::lock_guard<std::mutex> lock(fwd.grad_mutex);
    auto it = fwd.grad_programs.find(wanted);
    if (it != fwd.grad_programs.end()) return it->second;
  }
  const int n = fwd.num_inputs;
  const int k_out = int(fwd.outputs.size());
  std::shared_ptr<FusedTrace> trace = begin_fused_trace(n + k_out, fwd.name + " backward");
  GradientBuilder gb(*trace);
  // Replay the forward code.
  gb.value.assign(fwd.code.size(), -1);
  for (size_t k = 0; k < fwd.code.size(); ++k) {
    FusedInstr in = fwd.code[k];
    if (in.kind == Kind::input) {
      gb.value[k] = int32_t(k);
      continue;
    }
    for (int32_t* op : {&in.a, &in.b, &in.c})
      if (*op >= 0) *op = gb.value[size_t(*op)];
    gb.value[k] = in.kind == Kind::constant ? gb.t.constant(in.value) : gb.t.push(in);
  }
  // Seed each output with its incoming gradient (inputs n .. n + k_out - 1), then walk back.
  gb.adjoint.assign(fwd.code.size(), -1);
  for (int j = 0; j < k_out; ++j) gb.accumulate(fwd.outputs[size_t(j)], n + j);
  for (size_t k = fwd.code.size(); k-- > size_t(n);) {
    const int32_t g = gb.adjoint[k];
    if (g >= 0) gb.backprop(fwd.code[k], int32_t(k), g);
  }
  // Inputs no output depends on get no gradient (undefined, as the single ops leave them).
  std::vector<FusedExpr> outputs;
  std::vector<int32_t> gradient_of;
  for (int i = 0; i < n; ++i) {
    const int32_t g = gb.adjoint[size_t(i)];
    if (!wanted[size_t(i)] || g < 0) continue;
    outputs.push_back(FusedExpr(&gb.t, g));
    gradient_of.push_back(i);
  }
  std::shared_ptr<const FusedProgram> prog;
  if (!outputs.empty()) {
    auto built = std::const_pointer_cast<FusedProgram>(end_fused_trace(gb.t, outputs));
    built->gradient_of = std::move(gradient_of);
    built->reads_input.assign(size_t(n), false);  // input i is instruction i
    const auto note = [&](int32_t k) {
      if (k >= 0 && k < n) built->reads_input[size_t(k)] = true;
    };
    for (const FusedInstr& in : built->code) note(in.a), note(in.b), note(in.c);
    for (int32_t o : built->outputs) note(o);
    prog = built;
  }
  std::lock_guard<std::mutex> lock(fwd.grad_mutex);
  return fwd.grad_programs.emplace(wanted, prog).first->second;
}

}  // namespace ignis::detail
