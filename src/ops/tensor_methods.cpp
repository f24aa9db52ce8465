// Tensor methods and operators that forward to the free functions of ops.h. No logic here.
#include <ostream>

#include "ignis/ops.h"
#include "ops/elementwise.h"

namespace ignis {

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return ignis::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o) const { return ignis::add(*this, o); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return ignis::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o) const { return ignis::sub(*this, o); }
Tensor Tensor::mul(const Tensor& o) const { return ignis::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return ignis::mul(*this, o); }
Tensor Tensor::div(const Tensor& o, RoundingMode m) const { return ignis::div(*this, o, m); }
Tensor Tensor::div(const Scalar& o, RoundingMode m) const { return ignis::div(*this, o, m); }
Tensor Tensor::pow(const Tensor& e) const { return ignis::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return ignis::pow(*this, e); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return ignis::add_(*this, o, alpha); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return ignis::sub_(*this, o, alpha); }
Tensor& Tensor::mul_(const Tensor& o) { return ignis::mul_(*this, o); }
Tensor& Tensor::div_(const Tensor& o, RoundingMode m) { return ignis::div_(*this, o, m); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) { return ignis::clamp_(*this, lo, hi); }

Tensor Tensor::neg() const { return ignis::neg(*this); }
Tensor Tensor::abs() const { return ignis::abs(*this); }
Tensor Tensor::exp() const { return ignis::exp(*this); }
Tensor Tensor::log() const { return ignis::log(*this); }
Tensor Tensor::sqrt() const { return ignis::sqrt(*this); }
Tensor Tensor::sigmoid() const { return ignis::sigmoid(*this); }
Tensor Tensor::tanh() const { return ignis::tanh(*this); }
Tensor Tensor::relu() const { return ignis::relu(*this); }
Tensor& Tensor::neg_() { return ignis::neg_(*this); }
Tensor& Tensor::abs_() { return ignis::abs_(*this); }
Tensor& Tensor::exp_() { return ignis::exp_(*this); }
Tensor& Tensor::log_() { return ignis::log_(*this); }
Tensor& Tensor::sqrt_() { return ignis::sqrt_(*this); }
Tensor& Tensor::sigmoid_() { return ignis::sigmoid_(*this); }
Tensor& Tensor::tanh_() { return ignis::tanh_(*this); }
Tensor& Tensor::relu_() { return ignis::relu_(*this); }
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return ignis::clamp(*this, lo, hi); }
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& v) const { return ignis::masked_fill(*this, mask, v); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) { return ignis::masked_fill_(*this, mask, v); }

Tensor Tensor::eq(const Tensor& o) const { return ignis::eq(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return ignis::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return ignis::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return ignis::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return ignis::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return ignis::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return ignis::ge(*this, o); }

Tensor Tensor::sum() const { return ignis::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return ignis::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return ignis::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return ignis::mean(*this, dims, keepdim); }
Tensor Tensor::max() const { return ignis::max(*this); }
Tensor Tensor::min() const { return ignis::min(*this); }
Tensor Tensor::argmax(std::optional<int64_t> d, bool k) const { return ignis::argmax(*this, d, k); }
Tensor Tensor::argmin(std::optional<int64_t> d, bool k) const { return ignis::argmin(*this, d, k); }

Tensor Tensor::matmul(const Tensor& o) const { return ignis::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return ignis::mm(*this, o); }

Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) {
  if (b.dtype() == kBool || a.is_bool()) return sub(full_like(b, a), b);  // raises sub's error
  return detail::binary_op(a, b, kernels::BinaryOp::sub, kernels::BinaryKind::Arithmetic, "sub",
                           {}, nullptr);
}
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Scalar& a, const Tensor& b) {
  return detail::binary_op(a, b, kernels::BinaryOp::div, kernels::BinaryKind::FloatOnly, "div",
                           {}, nullptr);
}
Tensor& operator+=(Tensor& a, const Tensor& b) { return add_(a, b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return sub_(a, b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return mul_(a, b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return div_(a, b); }
Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
Tensor operator&&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
Tensor operator||(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
Tensor operator!(const Tensor& a) { return logical_not(a); }

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ignis
