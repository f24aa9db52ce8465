// Classification metrics computed from predictions: the confusion matrix, per-class
// precision / recall / F1 with macro and weighted averages, and their printing as aligned
// tables. A small internal stand-in for ignis/metrics.h (written in parallel); swap it for
// the library's once that lands.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ignis_cli {

struct ClassScores {
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;  ///< samples whose true class is this one
};

struct ClassificationReport {
  std::vector<std::vector<int64_t>> confusion;  ///< [true][predicted]
  std::vector<ClassScores> per_class;
  ClassScores macro, weighted;  ///< support = all samples
  double accuracy = 0;
};

/// The report for `labels` and `predictions` (same length, values in [0, num_classes)).
/// A class never predicted has precision 0, one never present recall 0 (sklearn's
/// zero_division=0), and F1 is 0 when precision + recall is 0.
ClassificationReport classification_report(
    const std::vector<int64_t>& labels,
    const std::vector<int64_t>& predictions,
    int64_t num_classes);

/// Per-class table plus macro/weighted rows, then the confusion matrix (only up to 20
/// classes: a 100 x 100 table helps nobody on a terminal; it is in metrics.jsonl anyway).
std::string format_report(const ClassificationReport& r, const std::vector<std::string>& classes);

nlohmann::json to_json(const ClassificationReport& r);

}  // namespace ignis_cli
