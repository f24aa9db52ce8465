// Classification metrics accumulated over batches: accuracy, top-k accuracy, the confusion
// matrix, per-class precision/recall/F1 with macro and support-weighted averages, and a
// printable report. Counts are kept (not running averages), so streaming N batches gives
// exactly what one batch of all the samples gives. Empty classes follow sklearn's
// zero_division=0 convention: a ratio with a zero denominator is 0, never NaN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/tensor.h"

namespace ignis::metrics {

/// Precision, recall and F1 of one class or one average.
struct PRF {
  double precision = 0, recall = 0, f1 = 0;
};

class ClassificationMetrics {
 public:
  explicit ClassificationMetrics(int64_t num_classes);

  /// Adds a batch. `scores` is either logits/probabilities [N, C] (prediction = argmax, the
  /// first index among ties, as torch.argmax, for which NaN is the largest score; top-k
  /// becomes available) or integer class predictions [N]. `targets` is int64 [N] with values
  /// in [0, C). Any device.
  void update(const Tensor& scores, const Tensor& targets);
  /// Forgets every sample.
  void reset();
  /// Every count as one flat vector (sample counts, confusion matrix, target-rank histogram).
  /// Counts add: the element-wise sum of two objects' counts() is the counts() of one object
  /// that saw both sets of samples — how processes that each evaluated a shard combine.
  std::vector<int64_t> counts() const;
  /// Replaces every count with `counts` (as counts() returns them, possibly summed).
  /// Throws ValueError when its length does not fit num_classes().
  void set_counts(const std::vector<int64_t>& counts);

  int64_t num_classes() const { return num_classes_; }
  int64_t num_samples() const { return num_samples_; }
  /// Fraction of samples whose prediction equals the target (0 before any sample).
  double accuracy() const;
  /// Fraction whose target is among the k highest scores (ties broken by lower index first,
  /// consistently with argmax). Needs every update to have passed logits.
  double top_k_accuracy(int64_t k) const;
  /// [C, C] int64: entry (i, j) counts samples of true class i predicted as class j.
  Tensor confusion_matrix() const;
  /// Samples per true class.
  std::vector<int64_t> support() const;
  /// Per class: precision = tp / predicted, recall = tp / support, F1 their harmonic mean.
  std::vector<PRF> per_class() const;
  /// Unweighted mean over all C classes (classes never seen count as 0, as in sklearn).
  PRF macro_average() const;
  /// Mean weighted by support (0 when there are no samples).
  PRF weighted_average() const;
  /// sklearn-style report: per-class precision/recall/F1/support, accuracy, macro and
  /// weighted averages, then the confusion matrix labelled with class_names (default "0".."C-1").
  std::string format_report(const std::vector<std::string>& class_names = {}) const;

 private:
  int64_t num_classes_;
  int64_t num_samples_ = 0;
  int64_t logit_samples_ = 0;         // samples whose update carried scores (for top-k)
  std::vector<int64_t> confusion_;    // row-major [C, C]
  std::vector<int64_t> rank_counts_;  // rank_counts_[r]: samples whose target ranked r-th
};

}  // namespace ignis::metrics
