// nn::init: PyTorch's initialisation formulas over ignis's in-place random fills.
#include "ignis/nn/init.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/shape.h"
#include "ignis/autograd.h"

namespace ignis::nn::init {
using detail::shape_str;
namespace {

void check_floating(const Tensor& t, const char* op) {
  IGNIS_CHECK(t.defined(), ValueError, "[{}] undefined tensor", op);
  IGNIS_CHECK(is_floating(t.dtype()), DTypeError, "[{}] expects a floating tensor, got {}", op,
              dtype_name(t.dtype()));
}

int64_t fan_for_mode(const Tensor& t, std::string_view mode, const char* op) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (mode == "fan_in") return fan_in;
  if (mode == "fan_out") return fan_out;
  throw ValueError(fmt::format("[{}] mode {} not supported, please use fan_in or fan_out", op,
                               mode));
}

// Inverse of erf on (-1, 1): a rational first guess refined by Newton steps on erf, which
// converge quadratically; two steps reach double precision.
double erfinv(double y) {
  if (y <= -1) return -INFINITY;
  if (y >= 1) return INFINITY;
  const double a = 0.147, ln = std::log(1 - y * y);
  const double t = 2 / (M_PI * a) + ln / 2;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - ln / a) - t), y);
  for (int i = 0; i < 3; ++i)
    x -= (std::erf(x) - y) / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  return x;
}

}  // namespace

double calculate_gain(std::string_view nl, std::optional<double> param) {
  static const char* kOne[] = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                               "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  for (const char* n : kOne)
    if (nl == n) return 1;
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nl == "selu") return 3.0 / 4;
  throw ValueError(fmt::format("[calculate_gain] unsupported nonlinearity {}", nl));
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  IGNIS_CHECK(t.dim() >= 2, ValueError,
              "[calculate_fan_in_and_fan_out] fan in and fan out can not be computed for a "
              "tensor with fewer than 2 dimensions, got {}",
              shape_str(t.sizes()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor& uniform_(Tensor& t, double a, double b, Generator* gen) {
  check_floating(t, "uniform_");
  NoGradGuard no_grad;
  return t.uniform_(a, b, gen);
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  check_floating(t, "normal_");
  NoGradGuard no_grad;
  return t.normal_(mean, std, gen);
}

Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b, Generator* gen) {
  check_floating(t, "trunc_normal_");
  IGNIS_CHECK(a < b && std > 0, ValueError,
              "[trunc_normal_] needs a < b and std > 0, got a = {}, b = {}, std = {}", a, b, std);
  NoGradGuard no_grad;
  // Uniform draws mapped through the normal's inverse CDF restricted to [a, b]; done on the
  // host in float64 (ignis has no erfinv op), then copied into t on its device.
  auto cdf = [](double x) { return (1 + std::erf(x / std::sqrt(2.0))) / 2; };
  const double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  Tensor u = rand(t.sizes(), kFloat64, gen);
  std::vector<double> v = u.to_vector<double>();
  for (double& x : v) {
    const double z = erfinv(2 * (lo + (hi - lo) * x) - 1) * std * std::sqrt(2.0) + mean;
    x = std::min(std::max(z, a), b);
  }
  t.copy_(tensor(v, t.sizes(), kFloat64));
  return t;
}

Tensor& constant_(Tensor& t, double value) {
  check_floating(t, "constant_");
  NoGradGuard no_grad;
  return t.fill_(value);
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1); }

Tensor& dirac_(Tensor& t, int64_t groups) {
  check_floating(t, "dirac_");
  IGNIS_CHECK(t.dim() >= 3 && t.dim() <= 5, ValueError,
              "[dirac_] expected a 3-, 4- or 5-dimensional tensor, got {} dims", t.dim());
  IGNIS_CHECK(groups > 0 && t.size(0) % groups == 0, ValueError,
              "[dirac_] dim 0 ({}) must be divisible by groups ({})", t.size(0), groups);
  // Built on the host and copied in once, so `t` may be any view on any device.
  const int64_t out_per_group = t.size(0) / groups, in = t.size(1);
  int64_t centre_offset = 0, spatial = 1;  // flat offset of the kernel's centre tap
  for (int64_t d = 2; d < t.dim(); ++d) {
    centre_offset = centre_offset * t.size(d) + t.size(d) / 2;
    spatial *= t.size(d);
  }
  std::vector<double> v(size_t(t.numel()), 0.0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t d = 0; d < std::min(out_per_group, in); ++d) {
      const int64_t out_channel = g * out_per_group + d;
      v[size_t((out_channel * in + d) * spatial + centre_offset)] = 1.0;
    }
  NoGradGuard no_grad;
  t.copy_(tensor(v, t.sizes(), kFloat64));
  return t;
}

Tensor& kaiming_uniform_(Tensor& t, double a, std::string_view mode, std::string_view nl,
                         Generator* gen) {
  check_floating(t, "kaiming_uniform_");
  if (t.numel() == 0) return t;  // PyTorch warns and leaves an empty tensor alone
  const double std = calculate_gain(nl, a) / std::sqrt(double(fan_for_mode(t, mode, "kaiming_uniform_")));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(t, -bound, bound, gen);
}

Tensor& kaiming_normal_(Tensor& t, double a, std::string_view mode, std::string_view nl,
                        Generator* gen) {
  check_floating(t, "kaiming_normal_");
  if (t.numel() == 0) return t;
  const double std = calculate_gain(nl, a) / std::sqrt(double(fan_for_mode(t, mode, "kaiming_normal_")));
  return normal_(t, 0, std, gen);
}

Tensor& xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  check_floating(t, "xavier_uniform_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / double(fan_in + fan_out));
  return uniform_(t, -bound, bound, gen);
}

Tensor& xavier_normal_(Tensor& t, double gain, Generator* gen) {
  check_floating(t, "xavier_normal_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0, gain * std::sqrt(2.0 / double(fan_in + fan_out)), gen);
}

}  // namespace ignis::nn::init
