// Fused elementwise functions: a chain of elementwise ops run as one pass over memory.
//
//   auto chain = [](auto x, auto y) {         // generic: runs on Tensors as it is, or fused
//     auto t = relu(x * y + y) * 0.5 + 1.0;
//     return clamp(maximum(abs(-t) - y, y), -1.0, 1.0);
//   };
//   Tensor eager = chain(a, b);               // ten ops: ten passes, nine temporaries
//   auto fused = ignis::fuse(chain);          // traced on its first call
//   Tensor out = fused(a, b);                 // one pass: every block of elements goes
//                                             // through all the ops while it is in L1
//
// fuse(f) calls f once per number of arguments with FusedExpr values instead of tensors,
// which record the ops into a program (constants folded, unused values dropped); each call
// then runs the program over the broadcast shape of its tensors. The function may return one
// value or a std::tuple of values (then the call returns a std::tuple of tensors, written in
// the same pass).
//
// What may appear inside: the elementwise ops declared below (the arithmetic operators, the
// unary functions, maximum/minimum/pow, comparisons and where) and double constants. Anything
// else (a reduction, a matmul, control flow on values) does not compile or is not traced: f
// is called once, so a branch on a C++ variable is taken as it was at the first call.
//
// Semantics, against the same function run on tensors:
// - Results have the promoted floating dtype of the inputs (integer inputs compute in the
//   default float dtype); arithmetic runs in float for float32, bf16 and fp16 inputs (as the
//   single ops do), in double for float64. A comparison is 1 or 0 in that dtype, not bool.
// - Gradients flow as through the single ops (ties of maximum split in half, pow's base-0
//   rule, relu's mask …): backward is another fused program derived from this one, and can
//   itself be differentiated (create_graph).
// - The program runs as one kernel on the CPU (src/cpu/fuse.cpp) and on CUDA
//   (src/cuda/fuse.cu); a program too large for the CUDA kernel runs op by op through the
//   ordinary kernels: the same values, without the fusion.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ignis/tensor.h"

namespace ignis {

namespace detail {
struct FusedTrace;
struct FusedProgram;
}  // namespace detail

/// The most tensors a fused function takes, and the most values it returns.
inline constexpr int kMaxFusedInputs = 8;
inline constexpr int kMaxFusedOutputs = 8;

/// A value inside a function that fuse() is tracing: what its elementwise ops receive in
/// place of tensors. Only fuse() makes them; they live while the trace runs.
class FusedExpr {
 public:
  FusedExpr(detail::FusedTrace* trace, int32_t id) : trace_(trace), id_(id) {}
  detail::FusedTrace* trace() const { return trace_; }
  int32_t id() const { return id_; }

 private:
  detail::FusedTrace* trace_;
  int32_t id_;
};

// ---- the ops a fused function may use (each mirrors the tensor op of the same name) -------
FusedExpr operator-(const FusedExpr& x);
FusedExpr operator+(const FusedExpr& a, const FusedExpr& b);
FusedExpr operator-(const FusedExpr& a, const FusedExpr& b);
FusedExpr operator*(const FusedExpr& a, const FusedExpr& b);
FusedExpr operator/(const FusedExpr& a, const FusedExpr& b);
FusedExpr operator+(const FusedExpr& a, double b);
FusedExpr operator-(const FusedExpr& a, double b);
FusedExpr operator*(const FusedExpr& a, double b);
FusedExpr operator/(const FusedExpr& a, double b);
FusedExpr operator+(double a, const FusedExpr& b);
FusedExpr operator-(double a, const FusedExpr& b);
FusedExpr operator*(double a, const FusedExpr& b);
FusedExpr operator/(double a, const FusedExpr& b);
FusedExpr add(const FusedExpr& a, const FusedExpr& b);
FusedExpr sub(const FusedExpr& a, const FusedExpr& b);
FusedExpr mul(const FusedExpr& a, const FusedExpr& b);
FusedExpr div(const FusedExpr& a, const FusedExpr& b);

FusedExpr neg(const FusedExpr& x);
FusedExpr abs(const FusedExpr& x);
FusedExpr sign(const FusedExpr& x);
FusedExpr relu(const FusedExpr& x);
FusedExpr exp(const FusedExpr& x);
FusedExpr log(const FusedExpr& x);
FusedExpr log1p(const FusedExpr& x);
FusedExpr expm1(const FusedExpr& x);
FusedExpr sqrt(const FusedExpr& x);
FusedExpr rsqrt(const FusedExpr& x);
FusedExpr sin(const FusedExpr& x);
FusedExpr cos(const FusedExpr& x);
FusedExpr tanh(const FusedExpr& x);
FusedExpr sigmoid(const FusedExpr& x);
FusedExpr silu(const FusedExpr& x);
FusedExpr reciprocal(const FusedExpr& x);
/// approximate: "none" (erf) or "tanh", as the tensor op.
FusedExpr gelu(const FusedExpr& x, const std::string& approximate = "none");
FusedExpr softplus(const FusedExpr& x, double beta = 1, double threshold = 20);
FusedExpr clamp(const FusedExpr& x, std::optional<double> min, std::optional<double> max);
FusedExpr clamp_min(const FusedExpr& x, double min);
FusedExpr clamp_max(const FusedExpr& x, double max);

FusedExpr maximum(const FusedExpr& a, const FusedExpr& b);  ///< NaN propagates
FusedExpr minimum(const FusedExpr& a, const FusedExpr& b);
FusedExpr pow(const FusedExpr& base, const FusedExpr& exponent);
FusedExpr pow(const FusedExpr& base, double exponent);
FusedExpr pow(double base, const FusedExpr& exponent);

/// Comparisons give 1 or 0 in the compute dtype.
FusedExpr eq(const FusedExpr& a, const FusedExpr& b);
FusedExpr ne(const FusedExpr& a, const FusedExpr& b);
FusedExpr lt(const FusedExpr& a, const FusedExpr& b);
FusedExpr le(const FusedExpr& a, const FusedExpr& b);
FusedExpr gt(const FusedExpr& a, const FusedExpr& b);
FusedExpr ge(const FusedExpr& a, const FusedExpr& b);
FusedExpr eq(const FusedExpr& a, double b);
FusedExpr ne(const FusedExpr& a, double b);
FusedExpr lt(const FusedExpr& a, double b);
FusedExpr le(const FusedExpr& a, double b);
FusedExpr gt(const FusedExpr& a, double b);
FusedExpr ge(const FusedExpr& a, double b);
/// a where cond is non-zero, else b.
FusedExpr where(const FusedExpr& cond, const FusedExpr& a, const FusedExpr& b);
FusedExpr where(const FusedExpr& cond, const FusedExpr& a, double b);
FusedExpr where(const FusedExpr& cond, double a, const FusedExpr& b);

namespace detail {
/// Starts a trace of a function of num_inputs tensors (name: the op name in errors).
std::shared_ptr<FusedTrace> begin_fused_trace(int num_inputs, const std::string& name);
FusedExpr fused_input(FusedTrace& trace, int index);
/// Ends the trace: the program computing `outputs`.
std::shared_ptr<const FusedProgram> end_fused_trace(FusedTrace& trace,
                                                    const std::vector<FusedExpr>& outputs);
/// Runs a program on tensors (one per input; they broadcast together): one tensor per output.
std::vector<Tensor> run_fused(const std::shared_ptr<const FusedProgram>& program,
                              const std::vector<Tensor>& inputs);

template <class R>
struct FusedResult;  // what a traced function returned, and what the fused call returns
template <>
struct FusedResult<FusedExpr> {
  using type = Tensor;
  static std::vector<FusedExpr> values(const FusedExpr& r) { return {r}; }
  static Tensor unpack(std::vector<Tensor>&& out) { return std::move(out[0]); }
};
template <class... Es>
struct FusedResult<std::tuple<Es...>> {
  static_assert((std::is_same_v<Es, FusedExpr> && ...),
                "a fused function returns FusedExpr values (or a std::tuple of them)");
  static_assert(sizeof...(Es) >= 1 && sizeof...(Es) <= kMaxFusedOutputs,
                "a fused function returns between 1 and kMaxFusedOutputs values");
  using type = std::tuple<std::conditional_t<true, Tensor, Es>...>;
  static std::vector<FusedExpr> values(const std::tuple<Es...>& r) {
    return std::apply([](const auto&... e) { return std::vector<FusedExpr>{e...}; }, r);
  }
  static type unpack(std::vector<Tensor>&& out) {
    return unpack_at(std::move(out), std::index_sequence_for<Es...>{});
  }
  template <size_t... I>
  static type unpack_at(std::vector<Tensor>&& out, std::index_sequence<I...>) {
    return type{std::move(out[I])...};
  }
};
}  // namespace detail

/// A function fused by fuse(): call it with tensors. Copies share the traced programs; calls
/// from several threads are safe.
template <class F>
class FusedFunction {
 public:
  FusedFunction(F f, std::string name)
      : state_(std::make_shared<State>(std::move(f), std::move(name))) {}

  template <class... Ts>
  auto operator()(const Ts&... xs) const {
    static_assert((std::is_same_v<Ts, Tensor> && ...), "a fused function takes Tensors");
    static_assert(sizeof...(Ts) >= 1 && sizeof...(Ts) <= kMaxFusedInputs,
                  "a fused function takes between 1 and kMaxFusedInputs tensors");
    using Traced = decltype(trace_call(std::declval<detail::FusedTrace&>(),
                                       std::index_sequence_for<Ts...>{}));
    using Result = detail::FusedResult<std::decay_t<Traced>>;
    const std::shared_ptr<const detail::FusedProgram> program =
        program_for<Result>(std::index_sequence_for<Ts...>{});
    return Result::unpack(detail::run_fused(program, std::vector<Tensor>{xs...}));
  }

  const std::string& name() const { return state_->name; }

 private:
  struct State {
    State(F fn, std::string n) : f(std::move(fn)), name(std::move(n)) {}
    F f;
    std::string name;
    std::mutex mutex;
    std::shared_ptr<const detail::FusedProgram> programs[kMaxFusedInputs + 1];
  };

  template <size_t... I>
  auto trace_call(detail::FusedTrace& trace, std::index_sequence<I...>) const {
    return state_->f(detail::fused_input(trace, int(I))...);
  }

  template <class Result, size_t... I>
  std::shared_ptr<const detail::FusedProgram> program_for(std::index_sequence<I...> seq) const {
    constexpr size_t n = sizeof...(I);
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->programs[n]) {
      std::shared_ptr<detail::FusedTrace> trace = detail::begin_fused_trace(int(n), state_->name);
      const auto traced = trace_call(*trace, seq);
      state_->programs[n] = detail::end_fused_trace(*trace, Result::values(traced));
    }
    return state_->programs[n];
  }

  std::shared_ptr<State> state_;
};

/// Fuses an elementwise function of tensors (see the top of this header). `name` appears in
/// error messages and in the autograd graph.
template <class F>
FusedFunction<std::decay_t<F>> fuse(F&& f, std::string name = "fused") {
  return FusedFunction<std::decay_t<F>>(std::forward<F>(f), std::move(name));
}

}  // namespace ignis
