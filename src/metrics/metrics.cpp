// ClassificationMetrics: everything is derived from two integer tables, the confusion matrix
// and a histogram of the rank of the target among the scores. The rank histogram gives top-k
// accuracy for every k at once (top-k correct = samples with rank < k), so k need not be
// chosen before streaming. Batches are copied to the CPU as float64/int64 and counted in a
// plain loop: metrics are cheap next to the forward pass that produced the logits.
#include "ignis/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ignis/ops.h"

namespace ignis::metrics {
namespace {

double ratio(double num, double den) { return den == 0 ? 0.0 : num / den; }

// The order of scores that torch.argmax and torch.topk use: NaN above every number, NaNs equal
// to each other (so the first NaN is the argmax, and ties go to the lower index).
bool ranks_above(double a, double b) {
  if (std::isnan(a)) return !std::isnan(b);
  return a > b;
}
bool ranks_equal(double a, double b) { return std::isnan(a) ? std::isnan(b) : a == b; }

PRF make_prf(double tp, double predicted, double actual) {
  PRF r;
  r.precision = ratio(tp, predicted);
  r.recall = ratio(tp, actual);
  r.f1 = ratio(2 * r.precision * r.recall, r.precision + r.recall);
  return r;
}

}  // namespace

ClassificationMetrics::ClassificationMetrics(int64_t num_classes) : num_classes_(num_classes) {
  IGNIS_CHECK(
      num_classes > 0,
      ValueError,
      "[ClassificationMetrics] num_classes must be > 0, got {}",
      num_classes);
  reset();
}

void ClassificationMetrics::reset() {
  num_samples_ = logit_samples_ = 0;
  confusion_.assign(static_cast<size_t>(num_classes_ * num_classes_), 0);
  rank_counts_.assign(static_cast<size_t>(num_classes_), 0);
}

void ClassificationMetrics::update(const Tensor& scores, const Tensor& targets) {
  const int64_t C = num_classes_;
  IGNIS_CHECK(
      targets.dtype() == kInt64 && targets.dim() == 1,
      ValueError,
      "[ClassificationMetrics] targets must be 1-D int64, got {} of dim {}",
      dtype_name(targets.dtype()),
      targets.dim());
  const int64_t n = targets.size(0);
  const bool has_scores = scores.dim() == 2;
  if (has_scores) {
    IGNIS_CHECK(
        scores.size(0) == n && scores.size(1) == C,
        ValueError,
        "[ClassificationMetrics] logits must be [{}, {}], got [{}, {}]",
        n,
        C,
        scores.size(0),
        scores.size(1));
  } else {
    IGNIS_CHECK(
        scores.dim() == 1 && scores.size(0) == n && is_integral(scores.dtype(), true),
        ValueError,
        "[ClassificationMetrics] expected logits [N, C] or integer predictions [N] with "
        "N = {}, got {} of dim {}",
        n,
        dtype_name(scores.dtype()),
        scores.dim());
  }
  Tensor t = targets.detach().to(Device::cpu()).contiguous();
  const int64_t* tp = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    IGNIS_CHECK(
        tp[i] >= 0 && tp[i] < C,
        IndexError,
        "[ClassificationMetrics] target {} at {} is out of range [0, {})",
        tp[i],
        i,
        C);

  std::vector<int64_t> pred(static_cast<size_t>(n));
  std::vector<int64_t> rank(static_cast<size_t>(n));
  if (has_scores) {
    Tensor s = scores.detach().to(Device::cpu(), kFloat64).contiguous();
    const double* sp = s.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) {
      const double* row = sp + i * C;
      const double target_score = row[tp[i]];
      int64_t best = 0, r = 0;
      for (int64_t j = 0; j < C; ++j) {
        if (ranks_above(row[j], row[best])) best = j;
        // Classes ahead of the target: strictly higher, or equal with a lower index.
        if (ranks_above(row[j], target_score) || (ranks_equal(row[j], target_score) && j < tp[i]))
          ++r;
      }
      pred[i] = best;
      rank[i] = r;
    }
  } else {
    Tensor p = scores.detach().to(Device::cpu(), kInt64).contiguous();
    const int64_t* pp = p.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      IGNIS_CHECK(
          pp[i] >= 0 && pp[i] < C,
          IndexError,
          "[ClassificationMetrics] prediction {} at {} is out of range [0, {})",
          pp[i],
          i,
          C);
      pred[i] = pp[i];
    }
  }
  // Counted only after every check passed, so a bad batch leaves the totals unchanged.
  for (int64_t i = 0; i < n; ++i) {
    ++confusion_[static_cast<size_t>(tp[i] * C + pred[i])];
    if (has_scores) ++rank_counts_[static_cast<size_t>(rank[i])];
  }
  num_samples_ += n;
  if (has_scores) logit_samples_ += n;
}

std::vector<int64_t> ClassificationMetrics::counts() const {
  std::vector<int64_t> out{num_samples_, logit_samples_};
  out.insert(out.end(), confusion_.begin(), confusion_.end());
  out.insert(out.end(), rank_counts_.begin(), rank_counts_.end());
  return out;
}

void ClassificationMetrics::set_counts(const std::vector<int64_t>& counts) {
  const size_t want = 2 + confusion_.size() + rank_counts_.size();
  IGNIS_CHECK(
      counts.size() == want,
      ValueError,
      "[ClassificationMetrics::set_counts] {} counts given; {} classes need {}",
      counts.size(),
      num_classes_,
      want);
  num_samples_ = counts[0];
  logit_samples_ = counts[1];
  auto it = counts.begin() + 2;
  std::copy(it, it + int64_t(confusion_.size()), confusion_.begin());
  it += int64_t(confusion_.size());
  std::copy(it, it + int64_t(rank_counts_.size()), rank_counts_.begin());
}

double ClassificationMetrics::accuracy() const {
  int64_t correct = 0;
  for (int64_t c = 0; c < num_classes_; ++c) correct += confusion_[c * num_classes_ + c];
  return ratio(static_cast<double>(correct), static_cast<double>(num_samples_));
}

double ClassificationMetrics::top_k_accuracy(int64_t k) const {
  IGNIS_CHECK(k >= 1, ValueError, "[top_k_accuracy] k must be >= 1, got {}", k);
  IGNIS_CHECK(
      logit_samples_ == num_samples_,
      ValueError,
      "[top_k_accuracy] needs logits; {} of {} samples came as class predictions",
      num_samples_ - logit_samples_,
      num_samples_);
  int64_t hits = 0;
  for (int64_t r = 0; r < std::min(k, num_classes_); ++r) hits += rank_counts_[r];
  return ratio(static_cast<double>(hits), static_cast<double>(num_samples_));
}

Tensor ClassificationMetrics::confusion_matrix() const {
  return tensor<int64_t>(confusion_, Shape{num_classes_, num_classes_});
}

std::vector<int64_t> ClassificationMetrics::support() const {
  std::vector<int64_t> s(static_cast<size_t>(num_classes_), 0);
  for (int64_t i = 0; i < num_classes_; ++i)
    for (int64_t j = 0; j < num_classes_; ++j) s[i] += confusion_[i * num_classes_ + j];
  return s;
}

std::vector<PRF> ClassificationMetrics::per_class() const {
  const int64_t C = num_classes_;
  std::vector<PRF> out;
  std::vector<int64_t> sup = support();
  for (int64_t c = 0; c < C; ++c) {
    int64_t predicted = 0;
    for (int64_t i = 0; i < C; ++i) predicted += confusion_[i * C + c];
    out.push_back(make_prf(
        static_cast<double>(confusion_[c * C + c]),
        static_cast<double>(predicted),
        static_cast<double>(sup[c])));
  }
  return out;
}

PRF ClassificationMetrics::macro_average() const {
  PRF m;
  for (const PRF& p : per_class()) {
    m.precision += p.precision / num_classes_;
    m.recall += p.recall / num_classes_;
    m.f1 += p.f1 / num_classes_;
  }
  return m;
}

PRF ClassificationMetrics::weighted_average() const {
  PRF m;
  std::vector<PRF> pc = per_class();
  std::vector<int64_t> sup = support();
  for (int64_t c = 0; c < num_classes_; ++c) {
    double w = ratio(static_cast<double>(sup[c]), static_cast<double>(num_samples_));
    m.precision += w * pc[c].precision;
    m.recall += w * pc[c].recall;
    m.f1 += w * pc[c].f1;
  }
  return m;
}

std::string ClassificationMetrics::format_report(const std::vector<std::string>& names_in) const {
  const int64_t C = num_classes_;
  std::vector<std::string> names = names_in;
  if (names.empty())
    for (int64_t c = 0; c < C; ++c) names.push_back(std::to_string(c));
  IGNIS_CHECK(
      static_cast<int64_t>(names.size()) == C,
      ValueError,
      "[format_report] {} class names for {} classes",
      names.size(),
      C);
  size_t w = std::string("weighted avg").size();
  for (const auto& n : names) w = std::max(w, n.size());

  std::string out = fmt::format(
      "{:>{}} {:>10} {:>10} {:>10} {:>10}\n\n",
      "",
      w,
      "precision",
      "recall",
      "f1-score",
      "support");
  auto row = [&](const std::string& label, const PRF& p, int64_t support) {
    out += fmt::format(
        "{:>{}} {:>10.4f} {:>10.4f} {:>10.4f} {:>10}\n",
        label,
        w,
        p.precision,
        p.recall,
        p.f1,
        support);
  };
  std::vector<PRF> pc = per_class();
  std::vector<int64_t> sup = support();
  for (int64_t c = 0; c < C; ++c) row(names[c], pc[c], sup[c]);
  out += "\n";
  out += fmt::format(
      "{:>{}} {:>10} {:>10} {:>10.4f} {:>10}\n", "accuracy", w, "", "", accuracy(), num_samples_);
  row("macro avg", macro_average(), num_samples_);
  row("weighted avg", weighted_average(), num_samples_);

  // Confusion matrix: each column as wide as its name or its largest count.
  out += "\nconfusion matrix (rows: true class, columns: predicted class)\n";
  std::vector<size_t> cw(static_cast<size_t>(C));
  for (int64_t j = 0; j < C; ++j) {
    cw[j] = names[j].size();
    for (int64_t i = 0; i < C; ++i)
      cw[j] = std::max(cw[j], std::to_string(confusion_[i * C + j]).size());
  }
  out += fmt::format("{:>{}}", "", w);
  for (int64_t j = 0; j < C; ++j) out += fmt::format(" {:>{}}", names[j], cw[j]);
  out += "\n";
  for (int64_t i = 0; i < C; ++i) {
    out += fmt::format("{:>{}}", names[i], w);
    for (int64_t j = 0; j < C; ++j) out += fmt::format(" {:>{}}", confusion_[i * C + j], cw[j]);
    out += "\n";
  }
  return out;
}

}  // namespace ignis::metrics
