// The PyTorch reference suite: runs every case that make_cases.py wrote (inputs + PyTorch's
// outputs, see the format at the top of that script) through Ignis and compares result dtype,
// shape and values.
//
// How tests are registered (why not gtest_discover_tests): the case list is data produced by
// make_cases.py at test time (a CTest fixture), so it does not exist when the build runs the
// binary to discover tests. Instead main() reads the case index and registers one gtest test
// per case with ::testing::RegisterTest, named Suite.case (Elementwise.gelu_tanh, ...), so a
// failure names its case. CTest runs the binary once per suite with --gtest_filter=Suite.*
// (the suite names are fixed in tests/CMakeLists.txt), and the Meta tests check that every op
// of the table below has cases and that every fixed suite has cases — so a case list that
// silently shrinks fails. Run by hand:
//   IGNIS_REFERENCE_DIR=<build>/tests/reference_cases tests/test_reference --gtest_filter='*gelu*'
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ignis/ignis.h"
#include "support/test_support.h"

namespace {

namespace ig = ignis;
using json = nlohmann::json;
using ig::Tensor;
using Tensors = std::vector<Tensor>;

// ------------------------------------------------------------------ loading ---------------
struct Suite {
  std::string dir;
  json index;
  std::vector<char> blob;  // tensors.bin
};
Suite& data() {
  static Suite s;
  return s;
}

ig::DType parse_dtype(const std::string& name) {
  for (int i = 0; i < ig::kNumDTypes; ++i)
    if (name == ig::dtype_name(ig::DType(i))) return ig::DType(i);
  throw std::runtime_error("unknown dtype " + name);
}

ig::Shape shape_of(const json& j) { return j.get<ig::Shape>(); }

/// Applies one recorded view op (the vocabulary of make_cases.py's apply_view and _views).
Tensor apply_view(const Tensor& t, const json& v) {
  const std::string k = v[0];
  if (k == "permute") return t.permute(shape_of(v[1]));
  if (k == "transpose") return t.transpose(v[1], v[2]);
  if (k == "slice") return t.slice(v[1], v[2].get<int64_t>(), v[3].get<int64_t>(), v[4]);
  if (k == "expand") return t.expand(shape_of(v[1]));
  if (k == "select") return t.select(v[1], v[2]);
  if (k == "reshape") return t.reshape(shape_of(v[1]));
  if (k == "view") return t.view(shape_of(v[1]));
  if (k == "flatten") return t.flatten(v[1], v[2]);
  if (k == "unflatten") return t.unflatten(v[1], shape_of(v[2]));
  if (k == "squeeze") return v.size() == 1 ? t.squeeze() : t.squeeze(v[1].get<int64_t>());
  if (k == "unsqueeze") return t.unsqueeze(v[1]);
  if (k == "t") return t.t();
  if (k == "narrow") return t.narrow(v[1], v[2], v[3]);
  throw std::runtime_error("unknown view op " + k);
}

/// Address of a recorded tensor's bytes in tensors.bin.
const char* bytes_of(const json& spec) {
  return data().blob.data() + spec["offset"].get<int64_t>();
}

/// An input: the contiguous storage tensor (copied out of the blob), then its view ops.
Tensor make_input(const json& spec) {
  const ig::DType dt = parse_dtype(spec["dtype"]);
  Tensor t = ig::from_blob(const_cast<char*>(bytes_of(spec)), shape_of(spec["shape"]), dt)
                 .clone();
  if (spec.contains("view"))
    for (const json& v : spec["view"]) t = apply_view(t, v);
  return t;
}

int64_t numel_of(const ig::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// n values of dtype at p, as doubles (bfloat16/float16 from their bit patterns). Reading the
/// raw bytes ourselves keeps Ignis's own conversions out of the comparison.
std::vector<double> decode(const void* p, ig::DType dt, int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  ig::visit_dtype(dt, [&]<class T>() {
    for (int64_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, static_cast<const char*>(p) + i * int64_t(sizeof(T)), sizeof(T));
      if constexpr (std::is_same_v<T, ig::BFloat16> || std::is_same_v<T, ig::Half>)
        v[size_t(i)] = double(float(x));
      else
        v[size_t(i)] = double(x);
    }
  });
  return v;
}
std::vector<double> decode(const Tensor& t) {
  Tensor c = t.contiguous();
  return decode(c.data_ptr(), c.dtype(), c.numel());
}
std::vector<double> decode(const json& spec) {
  return decode(bytes_of(spec), parse_dtype(spec["dtype"]), numel_of(shape_of(spec["shape"])));
}

// ------------------------------------------------------------------ arguments -------------
ig::Scalar scalar(const json& j) {
  const std::string kind = j["scalar"], text = j["value"];
  if (kind == "bool") return ig::Scalar(text == "1");
  if (kind == "int") return ig::Scalar(int64_t(std::stoll(text)));
  return ig::Scalar(std::strtod(text.c_str(), nullptr));  // takes "nan", "inf", "-inf"
}
std::optional<ig::Scalar> opt_scalar(const json& a, const char* key) {
  if (!a.contains(key) || a[key].is_null()) return std::nullopt;
  return scalar(a[key]);
}
ig::Scalar scalar_or(const json& a, const char* key, ig::Scalar dflt) {
  return a.contains(key) ? scalar(a[key]) : dflt;
}
ig::Shape dims(const json& a) { return a.contains("dims") ? shape_of(a["dims"]) : ig::Shape{}; }
bool keepdim(const json& a) { return a.value("keepdim", false); }
ig::TensorOptions opts(const json& a) {
  ig::TensorOptions o;
  if (a.contains("dtype") && !a["dtype"].is_null()) o.dtype = parse_dtype(a["dtype"]);
  return o;
}
ig::RoundingMode mode(const json& a) {
  std::string m = "true";
  if (a.contains("mode") && !a["mode"].is_null()) m = a["mode"].get<std::string>();
  return m == "floor" ? ig::RoundingMode::Floor
         : m == "trunc" ? ig::RoundingMode::Trunc
                        : ig::RoundingMode::True;
}
Tensors pair(const std::tuple<Tensor, Tensor>& t) { return {std::get<0>(t), std::get<1>(t)}; }

// ------------------------------------------------------------------ the op table ----------
// Op name (as in make_cases.py's OPS) -> a call of the public Ignis API with the recorded
// arguments. The output list has the order of PyTorch's outputs.
using OpFn = std::function<Tensors(Tensors&, const json&)>;
#define UNARY(name) {#name, [](Tensors& x, const json&) -> Tensors { return {ig::name(x[0])}; }}
#define BINARY(name) \
  {#name, [](Tensors& x, const json&) -> Tensors { return {ig::name(x[0], x[1])}; }}

const std::map<std::string, OpFn>& op_table() {
  static const std::map<std::string, OpFn> table = {
      // factories
      {"zeros", [](Tensors&, const json& a) -> Tensors { return {ig::zeros(shape_of(a["shape"]), opts(a))}; }},
      {"ones", [](Tensors&, const json& a) -> Tensors { return {ig::ones(shape_of(a["shape"]), opts(a))}; }},
      {"full", [](Tensors&, const json& a) -> Tensors {
         return {ig::full(shape_of(a["shape"]), scalar(a["value"]), opts(a))};
       }},
      {"arange", [](Tensors&, const json& a) -> Tensors {
         return {ig::arange(scalar(a["start"]), scalar(a["end"]), scalar(a["step"]), opts(a))};
       }},
      {"linspace", [](Tensors&, const json& a) -> Tensors {
         return {ig::linspace(a["start"], a["end"], a["steps"], opts(a))};
       }},
      {"eye", [](Tensors&, const json& a) -> Tensors {
         std::optional<int64_t> m;
         if (a.contains("m")) m = a["m"].get<int64_t>();
         return {ig::eye(a["n"], m, opts(a))};
       }},
      {"scalar_tensor", [](Tensors&, const json& a) -> Tensors { return {ig::scalar_tensor(scalar(a["value"]), opts(a))}; }},
      {"full_like", [](Tensors& x, const json& a) -> Tensors { return {ig::full_like(x[0], scalar(a["value"]), opts(a))}; }},
      {"zeros_like", [](Tensors& x, const json& a) -> Tensors { return {ig::zeros_like(x[0], opts(a))}; }},
      // copies, conversions, views
      {"to", [](Tensors& x, const json& a) -> Tensors { return {x[0].to(parse_dtype(a["dtype"]))}; }},
      {"contiguous", [](Tensors& x, const json&) -> Tensors { return {x[0].contiguous()}; }},
      {"clone", [](Tensors& x, const json&) -> Tensors { return {x[0].clone()}; }},
      {"copy_", [](Tensors& x, const json&) -> Tensors {
         Tensor y = x[0].clone();
         y.copy_(x[1]);
         return {y};
       }},
      {"views", [](Tensors& x, const json& a) -> Tensors {
         Tensor t = x[0];
         for (const json& v : a["ops"]) t = apply_view(t, v);
         return {t};
       }},
      // unary
      UNARY(neg), UNARY(abs), UNARY(sign), UNARY(exp), UNARY(log), UNARY(log1p), UNARY(expm1),
      UNARY(sqrt), UNARY(rsqrt), UNARY(sin), UNARY(cos), UNARY(tanh), UNARY(sigmoid),
      UNARY(relu), UNARY(silu), UNARY(isnan), UNARY(isinf), UNARY(isfinite), UNARY(logical_not),
      {"gelu", [](Tensors& x, const json& a) -> Tensors { return {ig::gelu(x[0], a["approximate"].get<std::string>())}; }},
      {"softplus", [](Tensors& x, const json& a) -> Tensors {
         return {ig::softplus(x[0], a["beta"], a["threshold"])};
       }},
      {"clamp", [](Tensors& x, const json& a) -> Tensors {
         return {ig::clamp(x[0], opt_scalar(a, "min"), opt_scalar(a, "max"))};
       }},
      {"clamp_min", [](Tensors& x, const json& a) -> Tensors { return {ig::clamp_min(x[0], scalar(a["min"]))}; }},
      {"clamp_max", [](Tensors& x, const json& a) -> Tensors { return {ig::clamp_max(x[0], scalar(a["max"]))}; }},
      // in place: the result must be the (modified) first argument itself
      {"relu_", [](Tensors& x, const json&) -> Tensors { return {ig::relu_(x[0])}; }},
      {"clamp_", [](Tensors& x, const json& a) -> Tensors {
         return {ig::clamp_(x[0], opt_scalar(a, "min"), opt_scalar(a, "max"))};
       }},
      {"add_", [](Tensors& x, const json& a) -> Tensors { return {ig::add_(x[0], x[1], scalar_or(a, "alpha", 1))}; }},
      {"mul_", [](Tensors& x, const json&) -> Tensors { return {ig::mul_(x[0], x[1])}; }},
      {"div_", [](Tensors& x, const json& a) -> Tensors { return {ig::div_(x[0], x[1], mode(a))}; }},
      // binary
      {"add", [](Tensors& x, const json& a) -> Tensors { return {ig::add(x[0], x[1], scalar_or(a, "alpha", 1))}; }},
      {"sub", [](Tensors& x, const json& a) -> Tensors { return {ig::sub(x[0], x[1], scalar_or(a, "alpha", 1))}; }},
      BINARY(mul), BINARY(floor_divide), BINARY(pow), BINARY(maximum), BINARY(minimum),
      BINARY(eq), BINARY(ne), BINARY(lt), BINARY(le), BINARY(gt), BINARY(ge),
      BINARY(logical_and), BINARY(logical_or), BINARY(logical_xor),
      {"div", [](Tensors& x, const json& a) -> Tensors { return {ig::div(x[0], x[1], mode(a))}; }},
      {"add_s", [](Tensors& x, const json& a) -> Tensors { return {ig::add(x[0], scalar(a["b"]))}; }},
      {"sub_s", [](Tensors& x, const json& a) -> Tensors { return {ig::sub(x[0], scalar(a["b"]))}; }},
      {"mul_s", [](Tensors& x, const json& a) -> Tensors { return {ig::mul(x[0], scalar(a["b"]))}; }},
      {"div_s", [](Tensors& x, const json& a) -> Tensors { return {ig::div(x[0], scalar(a["b"]), mode(a))}; }},
      {"pow_s", [](Tensors& x, const json& a) -> Tensors { return {ig::pow(x[0], scalar(a["b"]))}; }},
      {"rpow_s", [](Tensors& x, const json& a) -> Tensors { return {ig::pow(scalar(a["b"]), x[0])}; }},
      {"cmp_s", [](Tensors& x, const json& a) -> Tensors {
         const std::string c = a["cmp"];
         const ig::Scalar b = scalar(a["b"]);
         if (c == "eq") return {ig::eq(x[0], b)};
         if (c == "ne") return {ig::ne(x[0], b)};
         if (c == "lt") return {ig::lt(x[0], b)};
         if (c == "le") return {ig::le(x[0], b)};
         if (c == "gt") return {ig::gt(x[0], b)};
         return {ig::ge(x[0], b)};
       }},
      {"where", [](Tensors& x, const json&) -> Tensors { return {ig::where(x[0], x[1], x[2])}; }},
      {"where_sb", [](Tensors& x, const json& a) -> Tensors { return {ig::where(x[0], x[1], scalar(a["b"]))}; }},
      {"where_sa", [](Tensors& x, const json& a) -> Tensors { return {ig::where(x[0], scalar(a["a"]), x[1])}; }},
      // reductions
      {"sum", [](Tensors& x, const json& a) -> Tensors {
         return {ig::sum(x[0], dims(a), keepdim(a), opts(a).dtype)};
       }},
      {"mean", [](Tensors& x, const json& a) -> Tensors { return {ig::mean(x[0], dims(a), keepdim(a))}; }},
      {"prod", [](Tensors& x, const json& a) -> Tensors { return {ig::prod(x[0], dims(a), keepdim(a))}; }},
      {"amax", [](Tensors& x, const json& a) -> Tensors { return {ig::amax(x[0], dims(a), keepdim(a))}; }},
      {"amin", [](Tensors& x, const json& a) -> Tensors { return {ig::amin(x[0], dims(a), keepdim(a))}; }},
      {"max_all", [](Tensors& x, const json&) -> Tensors { return {ig::max(x[0])}; }},
      {"min_all", [](Tensors& x, const json&) -> Tensors { return {ig::min(x[0])}; }},
      {"max_dim", [](Tensors& x, const json& a) -> Tensors { return pair(ig::max(x[0], a["dim"].get<int64_t>(), keepdim(a))); }},
      {"min_dim", [](Tensors& x, const json& a) -> Tensors { return pair(ig::min(x[0], a["dim"].get<int64_t>(), keepdim(a))); }},
      {"argmax", [](Tensors& x, const json& a) -> Tensors {
         std::optional<int64_t> d;
         if (a.contains("dim")) d = a["dim"].get<int64_t>();
         return {ig::argmax(x[0], d, keepdim(a))};
       }},
      {"argmin", [](Tensors& x, const json& a) -> Tensors {
         std::optional<int64_t> d;
         if (a.contains("dim")) d = a["dim"].get<int64_t>();
         return {ig::argmin(x[0], d, keepdim(a))};
       }},
      {"var", [](Tensors& x, const json& a) -> Tensors { return {ig::var(x[0], dims(a), a["correction"], keepdim(a))}; }},
      {"std", [](Tensors& x, const json& a) -> Tensors { return {ig::std(x[0], dims(a), a["correction"], keepdim(a))}; }},
      {"norm", [](Tensors& x, const json& a) -> Tensors {
         const std::string p = a["p"];
         return {ig::norm(x[0], std::strtod(p.c_str(), nullptr), dims(a), keepdim(a))};
       }},
      {"all", [](Tensors& x, const json& a) -> Tensors { return {ig::all(x[0], dims(a), keepdim(a))}; }},
      {"any", [](Tensors& x, const json& a) -> Tensors { return {ig::any(x[0], dims(a), keepdim(a))}; }},
      {"logsumexp", [](Tensors& x, const json& a) -> Tensors { return {ig::logsumexp(x[0], dims(a), keepdim(a))}; }},
      {"cumsum", [](Tensors& x, const json& a) -> Tensors { return {ig::cumsum(x[0], a["dim"])}; }},
      {"softmax", [](Tensors& x, const json& a) -> Tensors { return {ig::softmax(x[0], a["dim"])}; }},
      {"log_softmax", [](Tensors& x, const json& a) -> Tensors { return {ig::log_softmax(x[0], a["dim"])}; }},
      // linear algebra
      BINARY(matmul), BINARY(mm), BINARY(bmm), BINARY(outer), BINARY(dot),
      {"addmm", [](Tensors& x, const json& a) -> Tensors {
         return {ig::addmm(x[0], x[1], x[2], scalar(a["beta"]), scalar(a["alpha"]))};
       }},
      {"baddbmm", [](Tensors& x, const json& a) -> Tensors {
         return {ig::baddbmm(x[0], x[1], x[2], scalar(a["beta"]), scalar(a["alpha"]))};
       }},
      // indexing and joining
      {"index_select", [](Tensors& x, const json& a) -> Tensors { return {ig::index_select(x[0], a["dim"], x[1])}; }},
      {"gather", [](Tensors& x, const json& a) -> Tensors { return {ig::gather(x[0], a["dim"], x[1])}; }},
      {"scatter", [](Tensors& x, const json& a) -> Tensors { return {ig::scatter(x[0], a["dim"], x[1], x[2])}; }},
      {"scatter_value", [](Tensors& x, const json& a) -> Tensors {
         return {ig::scatter(x[0], a["dim"], x[1], scalar(a["value"]))};
       }},
      {"scatter_add", [](Tensors& x, const json& a) -> Tensors { return {ig::scatter_add(x[0], a["dim"], x[1], x[2])}; }},
      {"index_add", [](Tensors& x, const json& a) -> Tensors {
         return {ig::index_add(x[0], a["dim"], x[1], x[2], scalar(a["alpha"]))};
       }},
      {"masked_fill", [](Tensors& x, const json& a) -> Tensors { return {ig::masked_fill(x[0], x[1], scalar(a["value"]))}; }},
      {"masked_select", [](Tensors& x, const json&) -> Tensors { return {ig::masked_select(x[0], x[1])}; }},
      {"cat", [](Tensors& x, const json& a) -> Tensors { return {ig::cat(x, a["dim"])}; }},
      {"stack", [](Tensors& x, const json& a) -> Tensors { return {ig::stack(x, a["dim"])}; }},
      {"split", [](Tensors& x, const json& a) -> Tensors {
         if (a["split"].is_array()) return ig::split(x[0], shape_of(a["split"]), a["dim"]);
         return ig::split(x[0], a["split"].get<int64_t>(), a["dim"]);
       }},
      {"chunk", [](Tensors& x, const json& a) -> Tensors { return ig::chunk(x[0], a["chunks"], a["dim"]); }},
      {"one_hot", [](Tensors& x, const json& a) -> Tensors { return {ig::one_hot(x[0], a["num_classes"])}; }},
      {"topk", [](Tensors& x, const json& a) -> Tensors {
         return pair(ig::topk(x[0], a["k"], a["dim"], a["largest"], a["sorted"]));
       }},
      {"sort", [](Tensors& x, const json& a) -> Tensors {
         return pair(ig::sort(x[0], a["dim"], a["descending"], a["stable"]));
       }},
      {"argsort", [](Tensors& x, const json& a) -> Tensors {
         return {ig::argsort(x[0], a["dim"], a["descending"], a["stable"])};
       }},
      {"tril", [](Tensors& x, const json& a) -> Tensors { return {ig::tril(x[0], a["diagonal"])}; }},
      {"triu", [](Tensors& x, const json& a) -> Tensors { return {ig::triu(x[0], a["diagonal"])}; }},
  };
  return table;
}
#undef UNARY
#undef BINARY

// ------------------------------------------------------------------ comparison ------------
/// Default tolerances by result dtype (rtol, atol); integers and bool compare exactly.
std::pair<double, double> tolerance(ig::DType t) {
  switch (t) {
    case ig::kFloat32: return {1e-5, 1e-6};
    case ig::kFloat64: return {1e-12, 1e-12};
    case ig::kBFloat16:
    case ig::kFloat16: return {1e-2, 1e-3};
    default: return {0, 0};
  }
}

std::string fmt_index(int64_t i, const ig::Shape& s) {
  std::ostringstream o;
  o << "[";
  const auto idx = ig::testing::unravel(i, s);
  for (size_t k = 0; k < idx.size(); ++k) o << (k ? ", " : "") << idx[k];
  return o.str() + "]";
}

/// For index outputs whose ties make them ambiguous (topk, unstable sort): input gathered by
/// the indices along dim must equal PyTorch's values, and the indices along dim must differ.
::testing::AssertionResult check_gathered(const Tensor& idx, const json& g, const Tensors& inputs) {
  const Tensor& in = inputs.at(g["input"].get<size_t>());
  const ig::Shape& is = in.sizes();
  const ig::Shape& os = idx.sizes();
  const int64_t nd = int64_t(os.size());
  const int64_t dim = (g["dim"].get<int64_t>() + nd) % std::max<int64_t>(nd, 1);
  const std::vector<double> src = decode(in), ix = decode(idx), want = decode(g["values"]);
  std::ostringstream bad;
  int nbad = 0;
  for (int64_t p = 0; p < idx.numel(); ++p) {
    auto c = ig::testing::unravel(p, os);
    const int64_t j = int64_t(ix[size_t(p)]);
    if (j < 0 || j >= is[size_t(dim)]) {
      if (nbad++ < 5) bad << "\n  index " << j << " out of range at " << fmt_index(p, os);
      continue;
    }
    c[size_t(dim)] = j;
    const double got = src[size_t(ig::testing::ravel(c, is))], w = want[size_t(p)];
    if (!(got == w || (std::isnan(got) && std::isnan(w))))
      if (nbad++ < 5)
        bad << "\n  at " << fmt_index(p, os) << ": index " << j << " points to " << got
            << ", expected a " << w;
  }
  if (g.value("distinct", false)) {
    // Walk every line along dim and look for a repeated index.
    for (int64_t p = 0; p < idx.numel(); ++p) {
      auto c = ig::testing::unravel(p, os);
      if (c[size_t(dim)] != 0) continue;
      std::set<int64_t> seen;
      for (int64_t k = 0; k < os[size_t(dim)]; ++k) {
        c[size_t(dim)] = k;
        const int64_t j = int64_t(ix[size_t(ig::testing::ravel(c, os))]);
        if (!seen.insert(j).second && nbad++ < 5)
          bad << "\n  index " << j << " repeated at " << fmt_index(ig::testing::ravel(c, os), os);
      }
    }
  }
  if (nbad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << nbad << " bad indices" << bad.str();
}

::testing::AssertionResult check_signed_zeros(const std::vector<double>& got,
                                              const std::vector<double>& want, const ig::Shape& s) {
  std::ostringstream bad;
  int nbad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (want[i] == 0 && got[i] == 0 && std::signbit(want[i]) != std::signbit(got[i]))
      if (nbad++ < 5)
        bad << "\n  at " << fmt_index(int64_t(i), s) << ": got " << (std::signbit(got[i]) ? "-0" : "+0")
            << ", expected " << (std::signbit(want[i]) ? "-0" : "+0");
  if (nbad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << nbad << " zeros with the wrong sign" << bad.str();
}

void check_output(const Tensor& got, const json& want, const json& c, const Tensors& inputs) {
  const ig::DType wdt = parse_dtype(want["dtype"]);
  const ig::Shape wshape = shape_of(want["shape"]);
  ASSERT_TRUE(got.defined()) << "undefined result";
  EXPECT_EQ(std::string(ig::dtype_name(got.dtype())), ig::dtype_name(wdt)) << "result dtype";
  ASSERT_EQ(got.sizes(), wshape) << "result shape";
  if (got.dtype() != wdt) return;  // values would be read with the wrong width
  if (want.contains("gather")) {
    EXPECT_TRUE(check_gathered(got, want["gather"], inputs));
    return;
  }
  auto [rtol, atol] = tolerance(wdt);
  rtol = c.value("rtol", rtol);
  atol = c.value("atol", atol);
  const std::vector<double> g = decode(got), w = decode(want);
  EXPECT_TRUE(ig::testing::all_close(g, w, rtol, atol))
      << "shape " << ::testing::PrintToString(wshape) << " (flat indices, row-major)";
  if (c.value("signed_zero", false)) EXPECT_TRUE(check_signed_zeros(g, w, wshape));
}

/// True when e is of the Ignis error class named cls.
bool is_error_class(const ig::Error& e, const std::string& cls) {
  if (cls == "ShapeError") return dynamic_cast<const ig::ShapeError*>(&e) != nullptr;
  if (cls == "DTypeError") return dynamic_cast<const ig::DTypeError*>(&e) != nullptr;
  if (cls == "IndexError") return dynamic_cast<const ig::IndexError*>(&e) != nullptr;
  if (cls == "ValueError") return dynamic_cast<const ig::ValueError*>(&e) != nullptr;
  return false;
}

// ------------------------------------------------------------------ tests -----------------
class CaseTest : public ::testing::Test {
 public:
  explicit CaseTest(const json* c) : c_(*c) {}
  void TestBody() override {
    const std::string op = c_["op"];
    auto it = op_table().find(op);
    ASSERT_NE(it, op_table().end()) << "op '" << op << "' is not in test_reference.cpp's table";
    Tensors inputs;
    for (const json& s : c_["inputs"]) inputs.push_back(make_input(s));
    Tensors before = inputs;  // handles: in-place ops must return these same tensors
    Tensors outs;
    const std::string want_error = c_.value("expect_error", "");
    try {
      outs = it->second(inputs, c_["args"]);
    } catch (const ig::NotImplementedError& e) {
      FAIL() << "NotImplementedError: " << e.what();
    } catch (const ig::Error& e) {
      if (!want_error.empty()) {
        EXPECT_TRUE(is_error_class(e, want_error))
            << "expected " << want_error << ", got: " << e.what();
        EXPECT_EQ(e.what()[0], '[') << "message should start with [op]: " << e.what();
        return;
      }
      FAIL() << "threw: " << e.what();
    } catch (const std::exception& e) {
      FAIL() << "threw a non-Ignis exception: " << e.what();
    }
    ASSERT_TRUE(want_error.empty()) << "expected " << want_error << "; PyTorch raises here";
    const json& wants = c_["outputs"];
    ASSERT_EQ(outs.size(), wants.size()) << "number of outputs";
    if (op.back() == '_' && op != "copy_")
      EXPECT_TRUE(outs[0].is_same_storage(before[0])) << "in-place op returned another tensor";
    for (size_t k = 0; k < outs.size(); ++k) {
      SCOPED_TRACE("output " + std::to_string(k));
      check_output(outs[k], wants[k], c_, before);
    }
  }

 private:
  const json& c_;
};

/// The suites CTest runs one by one (keep in step with tests/CMakeLists.txt).
const std::vector<std::string> kSuites = {"Factory",   "View",   "Elementwise", "Promotion",
                                          "Reduction", "Linalg", "Indexing"};

void register_cases() {
  for (const json& c : data().index["cases"]) {
    const json* cp = &c;
    ::testing::RegisterTest(c["suite"].get<std::string>().c_str(),
                            c["name"].get<std::string>().c_str(), nullptr, nullptr, __FILE__,
                            __LINE__, [cp]() -> ::testing::Test* { return new CaseTest(cp); });
  }
}

bool load(const std::string& dir, std::string* why) {
  std::ifstream idx(dir + "/cases.json"), bin(dir + "/tensors.bin", std::ios::binary);
  if (!idx || !bin) {
    *why = "no cases.json/tensors.bin in " + dir;
    return false;
  }
  data().dir = dir;
  data().index = json::parse(idx);
  data().blob.assign(std::istreambuf_iterator<char>(bin), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

// Coverage of the case list itself: every op of the table is exercised, every suite present.
TEST(Meta, EveryOpHasACase) {
  std::map<std::string, int> count;
  for (const json& c : data().index["cases"]) count[c["op"]]++;
  for (const auto& [name, fn] : op_table()) EXPECT_GT(count[name], 0) << "no case for op " << name;
}
TEST(Meta, EverySuiteHasCases) {
  std::map<std::string, int> count;
  for (const json& c : data().index["cases"]) count[c["suite"]]++;
  for (const std::string& s : kSuites) EXPECT_GT(count[s], 0) << "no cases in suite " << s;
  EXPECT_EQ(count.size(), kSuites.size()) << "a suite that CTest does not run";
}

// The checkers themselves must be able to fail (a tie-tolerant check that accepts anything
// would hide wrong sort indices).
TEST(Meta, CheckersCatchWrongResults) {
  const Tensors in = {ig::tensor<float>({3, 1, 3, 2}, ig::Shape{1, 4})};
  // The gather values of a descending sort: 3 3 2 1; both orders of the two 3s are right.
  const std::vector<float> vals = {3, 3, 2, 1};
  json g = {{"input", 0}, {"dim", 1}, {"distinct", true},
            {"values", {{"dtype", "float32"}, {"shape", {1, 4}}, {"offset", 0}}}};
  Suite saved = std::move(data());
  data().blob.assign(reinterpret_cast<const char*>(vals.data()),
                     reinterpret_cast<const char*>(vals.data() + 4));
  EXPECT_TRUE(check_gathered(ig::tensor<int64_t>({0, 2, 3, 1}, ig::Shape{1, 4}), g, in));
  EXPECT_TRUE(check_gathered(ig::tensor<int64_t>({2, 0, 3, 1}, ig::Shape{1, 4}), g, in));
  EXPECT_FALSE(check_gathered(ig::tensor<int64_t>({0, 0, 3, 1}, ig::Shape{1, 4}), g, in));
  EXPECT_FALSE(check_gathered(ig::tensor<int64_t>({0, 2, 1, 3}, ig::Shape{1, 4}), g, in));
  EXPECT_FALSE(check_gathered(ig::tensor<int64_t>({0, 2, 3, 4}, ig::Shape{1, 4}), g, in));
  data() = std::move(saved);
  EXPECT_TRUE(check_signed_zeros({0.0, -0.0}, {0.0, -0.0}, {2}));
  EXPECT_FALSE(check_signed_zeros({0.0, 0.0}, {0.0, -0.0}, {2}));
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
#if IGNIS_REFERENCE_HAVE_TORCH
  const char* env = std::getenv("IGNIS_REFERENCE_DIR");
  const std::string dir = env && *env ? env : IGNIS_REFERENCE_DEFAULT_DIR;
  std::string why;
  if (load(dir, &why)) {
    register_cases();
  } else {
    ::testing::RegisterTest("Reference", "CasesMissing", nullptr, nullptr, __FILE__, __LINE__,
                            [why]() -> ::testing::Test* {
                              struct Missing : ::testing::Test {
                                std::string why;
                                void TestBody() override {
                                  FAIL() << why << ": run tests/reference/make_cases.py --out DIR "
                                                   "and set IGNIS_REFERENCE_DIR=DIR (ctest does both)";
                                }
                              };
                              auto* t = new Missing;
                              t->why = why;
                              return t;
                            });
  }
#else
  ::testing::GTEST_FLAG(filter) = "Reference.Unavailable";
  ::testing::RegisterTest("Reference", "Unavailable", nullptr, nullptr, __FILE__, __LINE__,
                          []() -> ::testing::Test* {
                            struct Skip : ::testing::Test {
                              void TestBody() override {
                                GTEST_SKIP() << "python3-torch not installed: the PyTorch "
                                                "reference tests need Debian's python3-torch";
                              }
                            };
                            return new Skip;
                          });
#endif
  const int rc = RUN_ALL_TESTS();
  // A filter that matches nothing passes in gtest; here it means a suite lost all its cases.
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "test_reference: no test matched the filter\n");
    return 1;
  }
  return rc;
}
