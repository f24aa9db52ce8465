// Printing and recording a classification evaluation. The numbers come from the library's
// streaming accumulator (ignis/metrics.h); this file only lays them out for the terminal
// (class-index columns so ten classes fit a terminal, no matrix past 20 classes) and for
// metrics.jsonl.
#pragma once

#include <ignis/metrics.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ignis_cli {

/// Per-class table plus macro/weighted rows, then the confusion matrix (only up to 20
/// classes: a 100 x 100 table helps nobody on a terminal; it is in metrics.jsonl anyway).
std::string format_report(
    const ignis::metrics::ClassificationMetrics& m, const std::vector<std::string>& classes);

/// "42.0 s" below two minutes, else "3 min 12 s": run times and ETAs.
std::string duration_text(double seconds);

/// per_class, macro, weighted (each precision/recall/f1/support) and confusion [true][pred].
nlohmann::json to_json(const ignis::metrics::ClassificationMetrics& m);

}  // namespace ignis_cli
