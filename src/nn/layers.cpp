// The basic layers of layers.h: parameters, default initialisation, forward and extra_repr.
#include "ignis/nn/layers.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "core/shape.h"
#include "ignis/autograd.h"
#include "ignis/nn/functional.h"
#include "ignis/nn/init.h"
#include "ignis/ops.h"

namespace ignis::nn {
using detail::shape_str;
namespace F = functional;

// ---- Linear ---------------------------------------------------------------------------------
Linear::Linear(int64_t in, int64_t out, bool bias) : in_features(in), out_features(out) {
  init(bias);
}

Linear::Linear(Module* parent, std::string name, int64_t in, int64_t out, bool bias)
    : Module(parent, std::move(name)), in_features(in), out_features(out) {
  init(bias);
}

void Linear::init(bool with_bias) {
  IGNIS_CHECK(in_features >= 0 && out_features >= 0, ValueError,
              "[Linear] negative size: in_features = {}, out_features = {}", in_features,
              out_features);
  weight = empty({out_features, in_features});
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = empty({out_features});
    register_parameter("bias", &bias);
  }
  reset_parameters();
}

void Linear::reset_parameters() {
  // kaiming_uniform_(a = sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch.
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1 / std::sqrt(double(in_features)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) { return F::linear(x, weight, bias); }

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     bias.defined() ? "True" : "False");
}

// ---- activations ------------------------------------------------------------------------------
Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Identity::forward(const Tensor& x) { return x; }

Tensor LeakyReLU::forward(const Tensor& x) { return F::leaky_relu(x, negative_slope); }
std::string LeakyReLU::extra_repr() const {
  return fmt::format("negative_slope={}", negative_slope);
}

static std::string checked_approximate(std::string a) {
  IGNIS_CHECK(a == "none" || a == "tanh", ValueError,
              "[GELU] approximate must be \"none\" or \"tanh\", got \"{}\"", a);
  return a;
}
GELU::GELU(std::string approximate) : approximate(checked_approximate(std::move(approximate))) {}
GELU::GELU(Module* parent, std::string name, std::string approximate)
    : Module(parent, std::move(name)), approximate(checked_approximate(std::move(approximate))) {}
Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate); }
std::string GELU::extra_repr() const { return fmt::format("approximate='{}'", approximate); }

Tensor Softmax::forward(const Tensor& x) { return softmax(x, dim); }
std::string Softmax::extra_repr() const { return fmt::format("dim={}", dim); }

static double checked_p(double p) {
  IGNIS_CHECK(p >= 0 && p <= 1, ValueError,
              "[Dropout] probability has to be between 0 and 1, but got {}", p);
  return p;
}
Dropout::Dropout(double p) : p(checked_p(p)) {}
Dropout::Dropout(Module* parent, std::string name, double p)
    : Module(parent, std::move(name)), p(checked_p(p)) {}
Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p, is_training(), generator); }
std::string Dropout::extra_repr() const { return fmt::format("p={}, inplace=False", p); }

Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }
std::string Flatten::extra_repr() const {
  return fmt::format("start_dim={}, end_dim={}", start_dim, end_dim);
}

// ---- Embedding --------------------------------------------------------------------------------
Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> padding_idx)
    : num_embeddings(num), embedding_dim(dim), padding_idx(padding_idx) {
  init();
}

Embedding::Embedding(Module* parent, std::string name, int64_t num, int64_t dim,
                     std::optional<int64_t> padding_idx)
    : Module(parent, std::move(name)), num_embeddings(num), embedding_dim(dim),
      padding_idx(padding_idx) {
  init();
}

void Embedding::init() {
  IGNIS_CHECK(num_embeddings >= 0 && embedding_dim >= 0, ValueError,
              "[Embedding] negative size: num_embeddings = {}, embedding_dim = {}",
              num_embeddings, embedding_dim);
  if (padding_idx) {
    IGNIS_CHECK(*padding_idx < num_embeddings && *padding_idx >= -num_embeddings, ValueError,
                "[Embedding] padding_idx {} must be within num_embeddings {}", *padding_idx,
                num_embeddings);
    if (*padding_idx < 0) *padding_idx += num_embeddings;
  }
  weight = empty({num_embeddings, embedding_dim});
  register_parameter("weight", &weight);
  reset_parameters();
}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight[*padding_idx].zero_();
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  IGNIS_CHECK(is_integral(indices.dtype()), DTypeError,
              "[Embedding] indices must be integers, got {}", dtype_name(indices.dtype()));
  Tensor flat = indices.reshape({-1});
  if (flat.numel() > 0) {
    const int64_t lo = flat.min().item<int64_t>(), hi = flat.max().item<int64_t>();
    IGNIS_CHECK(lo >= 0 && hi < num_embeddings, IndexError,
                "[Embedding] index {} is out of range for {} embeddings",
                lo < 0 ? lo : hi, num_embeddings);
  }
  Tensor rows = index_select(weight, 0, flat);
  if (padding_idx) {
    // The padding row's value is returned but gets no gradient, as in PyTorch.
    Tensor pad = (flat == Scalar(*padding_idx)).unsqueeze(1);
    rows = where(pad, rows.detach(), rows);
  }
  Shape out = indices.sizes();
  out.push_back(embedding_dim);
  return rows.reshape(out);
}

std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

}  // namespace ignis::nn
