// Basic layers built from ignis ops (so gradients flow through them once ops record):
// Linear, the activations, Dropout, Flatten, Identity and Embedding. Every layer has two
// constructors: a root one (`Linear(10, 512)`) and one that registers it as a member of a
// parent (`Linear fc1{this, "fc1", 10, 512}`, Note [Module registration by pointer]).
// Convolution, normalisation and pooling layers live in their own headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ignis/nn/module.h"

namespace ignis::nn {

/// y = x W^T + b with weight [out_features, in_features] and bias [out_features]; x is
/// [*, in_features]. Initialised as PyTorch: U(-1/sqrt(in), 1/sqrt(in)) for both.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Linear(Module* parent, std::string name, int64_t in_features, int64_t out_features,
         bool bias = true);
  Tensor forward(const Tensor& x) override;
  /// Re-draws weight and bias with the default initialisation.
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t in_features, out_features;
  Tensor weight;
  Tensor bias;  ///< undefined (and not registered) when built without bias

 private:
  void init(bool bias);
};

/// Declares an activation layer with no state: Name(), Name(parent, name), forward.
#define IGNIS_NN_STATELESS_LAYER(Name)                                  \
  class Name : public Module {                                          \
   public:                                                               \
    Name() = default;                                                    \
    Name(Module* parent, std::string name) : Module(parent, std::move(name)) {} \
    Tensor forward(const Tensor& x) override;                           \
  };
IGNIS_NN_STATELESS_LAYER(ReLU)      ///< max(x, 0)
IGNIS_NN_STATELESS_LAYER(SiLU)      ///< x * sigmoid(x)
IGNIS_NN_STATELESS_LAYER(Sigmoid)   ///< 1 / (1 + exp(-x))
IGNIS_NN_STATELESS_LAYER(Tanh)      ///< tanh(x)
IGNIS_NN_STATELESS_LAYER(Identity)  ///< returns its input
#undef IGNIS_NN_STATELESS_LAYER

/// x for x >= 0, negative_slope * x otherwise.
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  LeakyReLU(Module* parent, std::string name, double negative_slope = 0.01)
      : Module(parent, std::move(name)), negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double negative_slope;
};

/// x * Phi(x); approximate "tanh" uses the tanh formula, "none" the exact erf.
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  GELU(Module* parent, std::string name, std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string approximate;
};

/// softmax along dim.
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Softmax(Module* parent, std::string name, int64_t dim) : Module(parent, std::move(name)), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};

/// Training: zeroes each element with probability p and scales the rest by 1/(1-p), using
/// ignis's Philox generator (default one unless set). Evaluation: identity.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Dropout(Module* parent, std::string name, double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
  Generator* generator = nullptr;  ///< null: the default generator
};

/// Flattens dims start_dim..end_dim into one (defaults keep the batch dim).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim(start_dim), end_dim(end_dim) {}
  Flatten(Module* parent, std::string name, int64_t start_dim = 1, int64_t end_dim = -1)
      : Module(parent, std::move(name)), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

/// A lookup table: integer indices of any shape [*] give rows of weight [num, dim] as
/// [*, dim]. Weight starts N(0, 1); the padding_idx row (if any) starts at zero.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  Embedding(Module* parent, std::string name, int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  /// Throws DTypeError for non-integer indices and IndexError for one out of range.
  Tensor forward(const Tensor& indices) override;
  void reset_parameters();
  std::string extra_repr() const override;

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  ///< normalised to [0, num_embeddings)
  Tensor weight;

 private:
  void init();
};

}  // namespace ignis::nn
