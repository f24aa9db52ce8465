// gradcheck: analytic gradients from backward against central finite differences, in float64.
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "autograd/record.h"
#include "ignis/ops.h"

namespace ignis::autograd {

std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& inputs_in, GradcheckOptions opt) {
  // float64 leaves; inputs that are not floating (indices) pass through untouched.
  std::vector<Tensor> inputs;
  for (const Tensor& t : inputs_in) {
    if (is_floating(t.dtype())) inputs.push_back(t.detach().to(kFloat64, true).requires_grad_());
    else inputs.push_back(t);
  }
  Tensor out = fn(inputs);
  // Random projection weights make every output element matter (a plain sum hides errors
  // that cancel).
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> dist(0.5, 1.5);
  std::vector<double> wv(size_t(out.numel()));
  for (double& w : wv) w = dist(rng);
  Tensor weights = tensor(wv, out.sizes()).to(out.device(), kFloat64);
  auto objective = [&](const std::vector<Tensor>& xs) {
    return sum(mul(fn(xs).to(kFloat64), weights)).item<double>();
  };
  std::vector<Tensor> floating;
  for (const Tensor& t : inputs)
    if (is_floating(t.dtype())) floating.push_back(t);
  std::vector<Tensor> analytic = grad({sum(mul(out.to(kFloat64), weights))}, floating, {}, false,
                                      false, /*allow_unused=*/true);
  std::string report;
  size_t fi = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!is_floating(inputs[k].dtype())) continue;
    Tensor& x = inputs[k];
    const Tensor a = analytic[fi].defined() ? analytic[fi].contiguous() : zeros_like(x);
    ++fi;
    std::vector<double> av = a.to(kFloat64).to_vector<double>();
    Tensor flat = x.detach().view({-1});  // x is contiguous (made by to(kFloat64, copy))
    for (int64_t i = 0; i < x.numel(); ++i) {
      NoGradGuard no_grad;
      const double orig = flat[i].item<double>();
      flat[i].fill_(orig + opt.eps);
      const double fp = objective(inputs);
      flat[i].fill_(orig - opt.eps);
      const double fm = objective(inputs);
      flat[i].fill_(orig);
      const double numeric = (fp - fm) / (2 * opt.eps);
      const double analytic_i = av[size_t(i)];
      if (std::fabs(numeric - analytic_i) > opt.atol + opt.rtol * std::fabs(numeric)) {
        report += fmt::format("input {} element {}: analytic {} vs numeric {}\n", k, i,
                              analytic_i, numeric);
        if (report.size() > 2000) return report;
      }
    }
  }
  return report;
}

}  // namespace ignis::autograd
