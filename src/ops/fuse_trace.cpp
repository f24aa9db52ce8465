// Tracing a fused function: the FusedExpr ops of include/ignis/fuse.h append instructions to
// the trace's program, folding what is constant; end_fused_trace drops dead code and lays
// out the CPU kernel's buffers.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/fuse_program.h"

namespace ignis::detail {

using kernels::BinaryOp;
using kernels::UnaryOp;
using Kind = FusedInstr::Kind;

// ---- the functors by enum --------------------------------------------------------------------

// Each walks the functor list once: these run while tracing and deriving, not per element.
double apply_unary(UnaryOp op, double x, const kernels::UnaryParams& p) {
  double r = 0;
  kernels::for_each_type(kernels::UnaryFunctors{}, [&]<class Op>() {
    if (Op::id == op) r = double(kernels::make_unary<Op>(p)(x));
  });
  return r;
}
double apply_binary(BinaryOp op, double a, double b, const kernels::BinaryParams& p) {
  double r = 0;
  kernels::for_each_type(kernels::BinaryFunctors{}, [&]<class Op>() {
    if (Op::id == op) r = double(kernels::make_binary<Op>(p)(a, b));
  });
  return r;
}
const char* unary_name(UnaryOp op) {
  const char* r = "?";
  kernels::for_each_type(kernels::UnaryFunctors{}, [&]<class Op>() {
    if (Op::id == op) r = Op::name;
  });
  return r;
}
const char* binary_name(BinaryOp op) {
  const char* r = "?";
  kernels::for_each_type(kernels::BinaryFunctors{}, [&]<class Op>() {
    if (Op::id == op) r = Op::name;
  });
  return r;
}
kernels::OpKind unary_kind(UnaryOp op) {
  kernels::OpKind r = kernels::OpKind::Floating;
  kernels::for_each_type(kernels::UnaryFunctors{}, [&]<class Op>() {
    if (Op::id == op) r = Op::kind;
  });
  return r;
}
kernels::BinaryKind binary_kind(BinaryOp op) {
  kernels::BinaryKind r = kernels::BinaryKind::Arithmetic;
  kernels::for_each_type(kernels::BinaryFunctors{}, [&]<class Op>() {
    if (Op::id == op) r = Op::kind;
  });
  return r;
}

// ---- recording ---------------------------------------------------------------------------------
int32_t FusedTrace::push(const FusedInstr& instr) {
  auto& code = program.code;
  const auto constant_at = [&](int32_t i) { return code[size_t(i)].is_constant(); };
  const auto value_at = [&](int32_t i) { return code[size_t(i)].value; };
  switch (instr.kind) {
    case Kind::unary:
      if (constant_at(instr.a))
        return constant(apply_unary(instr.unary_op(), value_at(instr.a), instr.unary_params));
      break;
    case Kind::binary:
      if (constant_at(instr.a) && constant_at(instr.b))
        return constant(apply_binary(instr.binary_op(), value_at(instr.a), value_at(instr.b),
                                     instr.binary_params));
      // x * 1 is x exactly (NaN and signed zeros included); backward makes many of them.
      if (instr.binary_op() == BinaryOp::mul) {
        if (constant_at(instr.b) && value_at(instr.b) == 1) return instr.a;
        if (constant_at(instr.a) && value_at(instr.a) == 1) return instr.b;
      }
      break;
    case Kind::where:
      if (constant_at(instr.c)) return value_at(instr.c) != 0 ? instr.a : instr.b;
      break;
    default: break;
  }
  code.push_back(instr);
  return int32_t(code.size() - 1);
}

int32_t FusedTrace::constant(double v) {
  // One instruction per distinct value (bit for bit: 0.0 and -0.0 differ), so that backward's
  // many 0s and 1s do not fill the CUDA kernel's table of numbers.
  auto& code = program.code;
  for (size_t k = code.size(); k-- > 0;)
    if (code[k].is_constant() && std::memcmp(&code[k].value, &v, sizeof v) == 0)
      return int32_t(k);
  FusedInstr i;
  i.kind = Kind::constant;
  i.value = v;
  program.code.push_back(i);
  return int32_t(program.code.size() - 1);
}

int32_t FusedTrace::unary(UnaryOp op, int32_t x, const kernels::UnaryParams& p) {
  FusedInstr i;
  i.kind = Kind::unary;
  i.op = uint8_t(op);
  i.a = x;
  i.unary_params = p;
  return push(i);
}

int32_t FusedTrace::binary(BinaryOp op, int32_t a, int32_t b, const kernels::BinaryParams& p) {
  FusedInstr i;
  i.kind = Kind::binary;
  i.op = uint8_t(op);
  i.a = a;
  i.b = b;
  i.binary_params = p;
  return push(i);
}

int32_t FusedTrace::where(int32_t cond, int32_t a, int32_t b) {
  FusedInstr i;
  i.kind = Kind::where;
  i.c = cond;
  i.a = a;
  i.b = b;
  return push(i);
}

namespace {
/// Drops instructions no output needs (inputs stay), then assigns the CPU kernel's buffers.
void finalize_fused_program(FusedProgram& prog) {
  const size_t n = prog.code.size();
  // Live: reachable from an output. Inputs keep their places whether used or not.
  std::vector<char> live(n, 0);
  for (int32_t o : prog.outputs) live[size_t(o)] = 1;
  for (size_t k = n; k-- > 0;) {
    if (!live[k]) continue;
    const FusedInstr& in = prog.code[k];
    for (int32_t op : {in.a, in.b, in.c})
      if (op >= 0) live[size_t(op)] = 1;
  }
  std::vector<int32_t> remap(n, -1);
  std::vector<FusedInstr> code;
  for (size_t k = 0; k < n; ++k) {
    if (!live[k] && k >= size_t(prog.num_inputs)) continue;
    FusedInstr in = prog.code[k];
    for (int32_t* op : {&in.a, &in.b, &in.c})
      if (*op >= 0) *op = remap[size_t(*op)];
    remap[k] = int32_t(code.size());
    code.push_back(in);
  }
  prog.code = std::move(code);
  for (int32_t& o : prog.outputs) o = remap[size_t(o)];

  // Buffers: one per value while it is live (an instruction may write over an operand it is
  // the last reader of: elementwise, element i is read before it is written). Outputs stay
  // live to the end, where the kernel stores them.
  const size_t m = prog.code.size();
  std::vector<size_t> last_use(m, 0);
  for (size_t k = 0; k < m; ++k) {
    const FusedInstr& in = prog.code[k];
    for (int32_t op : {in.a, in.b, in.c})
      if (op >= 0) last_use[size_t(op)] = k;
  }
  for (int32_t o : prog.outputs) last_use[size_t(o)] = m;
  prog.slot.assign(m, -1);
  std::vector<int32_t> free_slots;
  int32_t next = 0;
  for (size_t k = 0; k < m; ++k) {
    const FusedInstr& in = prog.code[k];
    // Operands whose last reader is k give their buffers back before k takes one.
    for (int32_t op : {in.a, in.b, in.c})
      if (op >= 0 && last_use[size_t(op)] == k && prog.slot[size_t(op)] >= 0) {
        if (std::find(free_slots.begin(), free_slots.end(), prog.slot[size_t(op)]) ==
            free_slots.end())
          free_slots.push_back(prog.slot[size_t(op)]);
      }
    if (in.is_constant()) continue;  // constants are single values, not buffers
    if (last_use[k] == 0) continue;  // an input nobody reads (every other value is read)
    if (!free_slots.empty()) {
      prog.slot[k] = free_slots.back();
      free_slots.pop_back();
    } else {
      prog.slot[k] = next++;
    }
  }
  prog.num_slots = next;
}
}  // namespace

std::shared_ptr<FusedTrace> begin_fused_trace(int num_inputs, const std::string& name) {
  // Users' functions are held to kMaxFusedInputs at compile time; gradient programs take
  // their forward's inputs and output gradients (programs wider than a plan run op by op).
  IGNIS_CHECK(num_inputs >= 1, ValueError, "[{}] a fused program of no input", name);
  auto trace = std::make_shared<FusedTrace>();
  trace->program.name = name;
  trace->program.num_inputs = num_inputs;
  for (int i = 0; i < num_inputs; ++i) {
    FusedInstr in;
    in.kind = Kind::input;
    trace->program.code.push_back(in);
  }
  return trace;
}

FusedExpr fused_input(FusedTrace& trace, int index) { return FusedExpr(&trace, index); }

std::shared_ptr<const FusedProgram> end_fused_trace(FusedTrace& trace,
                                                    const std::vector<FusedExpr>& outputs) {
  auto prog = std::make_shared<FusedProgram>();
  prog->name = trace.program.name;
  prog->num_inputs = trace.program.num_inputs;
  prog->code = std::move(trace.program.code);
  // Users' functions are held to kMaxFusedOutputs at compile time; gradient programs have one
  // output per input that wants a gradient.
  IGNIS_CHECK(!outputs.empty(), ValueError, "[{}] a fused function returns no value", prog->name);
  for (const FusedExpr& o : outputs) {
    IGNIS_CHECK(o.trace() == &trace, ValueError,
                "[{}] the function returned a value of another fused function's trace",
                prog->name);
    prog->outputs.push_back(o.id());
  }
  finalize_fused_program(*prog);
  return prog;
}

}  // namespace ignis::detail

// ---- the ops on FusedExpr ---------------------------------------------------------------------
namespace ignis {
namespace {
using detail::FusedTrace;
using kernels::BinaryOp;
using kernels::UnaryOp;

FusedTrace& trace_of(const FusedExpr& a, const FusedExpr& b, const char* op) {
  IGNIS_CHECK(a.trace() == b.trace(), ValueError,
              "[{}] operands from two different fused functions' traces", op);
  return *a.trace();
}

FusedExpr un(const FusedExpr& x, UnaryOp op, const kernels::UnaryParams& p = {}) {
  return FusedExpr(x.trace(), x.trace()->unary(op, x.id(), p));
}
FusedExpr bin(const FusedExpr& a, const FusedExpr& b, BinaryOp op,
              const kernels::BinaryParams& p = {}) {
  FusedTrace& t = trace_of(a, b, detail::binary_name(op));
  return FusedExpr(&t, t.binary(op, a.id(), b.id(), p));
}
FusedExpr bin(const FusedExpr& a, double b, BinaryOp op) {
  FusedTrace& t = *a.trace();
  return FusedExpr(&t, t.binary(op, a.id(), t.constant(b)));
}
FusedExpr bin(double a, const FusedExpr& b, BinaryOp op) {
  FusedTrace& t = *b.trace();
  return FusedExpr(&t, t.binary(op, t.constant(a), b.id()));
}
}  // namespace

FusedExpr operator-(const FusedExpr& x) { return un(x, UnaryOp::neg); }
FusedExpr operator+(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::add); }
FusedExpr operator-(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::sub); }
FusedExpr operator*(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::mul); }
FusedExpr operator/(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::div); }
FusedExpr operator+(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::add); }
FusedExpr operator-(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::sub); }
FusedExpr operator*(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::mul); }
FusedExpr operator/(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::div); }
FusedExpr operator+(double a, const FusedExpr& b) { return bin(a, b, BinaryOp::add); }
FusedExpr operator-(double a, const FusedExpr& b) { return bin(a, b, BinaryOp::sub); }
FusedExpr operator*(double a, const FusedExpr& b) { return bin(a, b, BinaryOp::mul); }
FusedExpr operator/(double a, const FusedExpr& b) { return bin(a, b, BinaryOp::div); }
FusedExpr add(const FusedExpr& a, const FusedExpr& b) { return a + b; }
FusedExpr sub(const FusedExpr& a, const FusedExpr& b) { return a - b; }
FusedExpr mul(const FusedExpr& a, const FusedExpr& b) { return a * b; }
FusedExpr div(const FusedExpr& a, const FusedExpr& b) { return a / b; }

FusedExpr neg(const FusedExpr& x) { return un(x, UnaryOp::neg); }
FusedExpr abs(const FusedExpr& x) { return un(x, UnaryOp::abs); }
FusedExpr sign(const FusedExpr& x) { return un(x, UnaryOp::sign); }
FusedExpr relu(const FusedExpr& x) { return un(x, UnaryOp::relu); }
FusedExpr exp(const FusedExpr& x) { return un(x, UnaryOp::exp); }
FusedExpr log(const FusedExpr& x) { return un(x, UnaryOp::log); }
FusedExpr log1p(const FusedExpr& x) { return un(x, UnaryOp::log1p); }
FusedExpr expm1(const FusedExpr& x) { return un(x, UnaryOp::expm1); }
FusedExpr sqrt(const FusedExpr& x) { return un(x, UnaryOp::sqrt); }
FusedExpr rsqrt(const FusedExpr& x) { return un(x, UnaryOp::rsqrt); }
FusedExpr sin(const FusedExpr& x) { return un(x, UnaryOp::sin); }
FusedExpr cos(const FusedExpr& x) { return un(x, UnaryOp::cos); }
FusedExpr tanh(const FusedExpr& x) { return un(x, UnaryOp::tanh); }
FusedExpr sigmoid(const FusedExpr& x) { return un(x, UnaryOp::sigmoid); }
FusedExpr silu(const FusedExpr& x) { return un(x, UnaryOp::silu); }
FusedExpr reciprocal(const FusedExpr& x) { return un(x, UnaryOp::reciprocal); }
FusedExpr gelu(const FusedExpr& x, const std::string& approximate) {
  IGNIS_CHECK(approximate == "none" || approximate == "tanh", ValueError,
              "[gelu] approximate must be \"none\" or \"tanh\", not \"{}\"", approximate);
  return un(x, approximate == "tanh" ? UnaryOp::gelu_tanh : UnaryOp::gelu);
}
FusedExpr softplus(const FusedExpr& x, double beta, double threshold) {
  IGNIS_CHECK(beta != 0, ValueError, "[softplus] beta must not be 0");
  return un(x, UnaryOp::softplus, kernels::UnaryParams{beta, threshold});
}
FusedExpr clamp(const FusedExpr& x, std::optional<double> lo, std::optional<double> hi) {
  IGNIS_CHECK(lo || hi, ValueError, "[clamp] at least one of min and max must be given");
  return un(x, UnaryOp::clamp, kernels::UnaryParams{lo.value_or(0), hi.value_or(0), bool(lo), bool(hi)});
}
FusedExpr clamp_min(const FusedExpr& x, double lo) { return clamp(x, lo, std::nullopt); }
FusedExpr clamp_max(const FusedExpr& x, double hi) { return clamp(x, std::nullopt, hi); }

FusedExpr maximum(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::maximum); }
FusedExpr minimum(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::minimum); }
FusedExpr pow(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::pow); }
FusedExpr pow(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::pow); }
FusedExpr pow(double a, const FusedExpr& b) { return bin(a, b, BinaryOp::pow); }

FusedExpr eq(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::eq); }
FusedExpr ne(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::ne); }
FusedExpr lt(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::lt); }
FusedExpr le(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::le); }
FusedExpr gt(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::gt); }
FusedExpr ge(const FusedExpr& a, const FusedExpr& b) { return bin(a, b, BinaryOp::ge); }
FusedExpr eq(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::eq); }
FusedExpr ne(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::ne); }
FusedExpr lt(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::lt); }
FusedExpr le(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::le); }
FusedExpr gt(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::gt); }
FusedExpr ge(const FusedExpr& a, double b) { return bin(a, b, BinaryOp::ge); }

FusedExpr where(const FusedExpr& cond, const FusedExpr& a, const FusedExpr& b) {
  trace_of(cond, a, "where");
  FusedTrace& t = trace_of(a, b, "where");
  return FusedExpr(&t, t.where(cond.id(), a.id(), b.id()));
}
FusedExpr where(const FusedExpr& cond, const FusedExpr& a, double b) {
  FusedTrace& t = trace_of(cond, a, "where");
  return FusedExpr(&t, t.where(cond.id(), a.id(), t.constant(b)));
}
FusedExpr where(const FusedExpr& cond, double a, const FusedExpr& b) {
  FusedTrace& t = trace_of(cond, b, "where");
  return FusedExpr(&t, t.where(cond.id(), t.constant(a), b.id()));
}

}  // namespace ignis
