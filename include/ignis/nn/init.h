// nn::init: in-place parameter initialisation with PyTorch's formulas and names. Every
// function works on any floating dtype and device, runs without recording gradients, and
// returns its argument. Random draws come from ignis's Philox generator (default one unless
// gen is given). Fans follow PyTorch: for a tensor [out, in, k1, k2, …], fan_in = in * k1 *
// k2 * … and fan_out = out * k1 * k2 * … (the receptive field of a convolution weight).
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "ignis/ops.h"
#include "ignis/tensor.h"

namespace ignis::nn::init {

/// The recommended gain for a nonlinearity: linear, conv1d/2d/3d, conv_transpose1d/2d/3d and
/// sigmoid 1; tanh 5/3; relu sqrt(2); leaky_relu sqrt(2 / (1 + slope^2)) with slope = param
/// (default 0.01); selu 3/4. Throws ValueError for other names.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

/// (fan_in, fan_out) of a tensor with at least 2 dims (ValueError otherwise).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

/// U(a, b).
Tensor& uniform_(Tensor& t, double a = 0, double b = 1, Generator* gen = nullptr);
/// N(mean, std^2).
Tensor& normal_(Tensor& t, double mean = 0, double std = 1, Generator* gen = nullptr);
/// N(mean, std^2) restricted to [a, b] (inverse-CDF sampling, as PyTorch).
Tensor& trunc_normal_(Tensor& t, double mean = 0, double std = 1, double a = -2, double b = 2,
                      Generator* gen = nullptr);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
/// The identity filter: for a conv weight [out, in / groups, k...], each group's output
/// channel d < min(out / groups, in) gets 1 at input channel d's centre tap, all else 0, so
/// the convolution passes its first inputs through unchanged (PyTorch's dirac_).
Tensor& dirac_(Tensor& t, int64_t groups = 1);

/// U(-bound, bound), bound = gain * sqrt(3 / fan); mode "fan_in" or "fan_out"; `a` is the
/// leaky_relu slope used by the gain. PyTorch's Linear default is a = sqrt(5).
Tensor& kaiming_uniform_(Tensor& t, double a = 0, std::string_view mode = "fan_in",
                         std::string_view nonlinearity = "leaky_relu", Generator* gen = nullptr);
/// N(0, std^2), std = gain / sqrt(fan).
Tensor& kaiming_normal_(Tensor& t, double a = 0, std::string_view mode = "fan_in",
                        std::string_view nonlinearity = "leaky_relu", Generator* gen = nullptr);
/// U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& t, double gain = 1, Generator* gen = nullptr);
/// N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& t, double gain = 1, Generator* gen = nullptr);

}  // namespace ignis::nn::init
