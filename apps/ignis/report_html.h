// report.html: one self-contained page per run (inline CSS and SVG; no scripts, fonts or
// anything else fetched), built from the run directory's own files so that the trainer needs
// one call and a finished run can be re-rendered: loss, accuracy and learning-rate curves per
// epoch, the test confusion matrix as a heat map, per-class precision/recall/F1 with averages,
// the configuration, device, throughput and total time.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ignis_cli {

/// The page for a run's config.json and metrics.jsonl records (epoch lines, then the test
/// line; a run without a test line gets the curves only).
std::string render_html_report(
    const nlohmann::json& config, const std::vector<nlohmann::json>& records);

/// Reads DIR/config.json and DIR/metrics.jsonl and writes DIR/report.html; returns its path.
std::string write_html_report(const std::string& run_dir);

}  // namespace ignis_cli
