// Inline SVG charts for report.html: line charts over epochs and a confusion-matrix heat map.
// Plain strings, no scripts, so the page renders anywhere, offline. Every element a check
// needs carries a class: each series is <g class="series" data-series=NAME> with one
// <circle class="point"> per value, each heat-map cell a <rect class="cell">.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ignis_cli {

/// Escapes & < > " ' so a user's string (a class name, a path) stays text in HTML.
std::string html_escape(const std::string& text);

struct Series {
  std::string name;                         ///< legend text and data-series attribute
  std::string color;                        ///< CSS colour
  std::vector<std::optional<double>> values;  ///< one per epoch; nullopt leaves a gap
};

/// A line chart of series over epochs 1..N, y axis from the data's range (or [0, 1] when
/// `unit_range`), `percent` labels the y ticks as percentages.
std::string line_chart(
    const std::string& id,
    const std::string& title,
    const std::vector<Series>& series,
    bool unit_range,
    bool percent);

/// The confusion matrix [true][predicted] as a heat map: cell shade by the share of its row
/// (so a rare class's mistakes stay visible), counts inside the cells, class names on both axes.
std::string heat_map(
    const std::string& id,
    const std::vector<std::vector<int64_t>>& confusion,
    const std::vector<std::string>& classes);

}  // namespace ignis_cli
