// SVG charts for report.html (see report_svg.h).
#include "report_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ignis_cli {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// Tick label: short enough for the axis, exact enough to read a learning rate.
std::string tick_label(double v, bool percent) {
  if (percent) return fmt::format("{:.0f}%", 100 * v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

std::string line_chart(
    const std::string& id,
    const std::string& title,
    const std::vector<Series>& series,
    bool unit_range,
    bool percent) {
  const double W = 480, H = 270, left = 60, right = 16, top = 30, bottom = 40;
  const double pw = W - left - right, ph = H - top - bottom;
  size_t epochs = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : series) {
    epochs = std::max(epochs, s.values.size());
    for (const auto& v : s.values)
      if (v && std::isfinite(*v)) lo = std::min(lo, *v), hi = std::max(hi, *v);
  }
  if (unit_range) lo = 0, hi = 1;
  if (!(lo <= hi)) lo = 0, hi = 1;  // no finite value at all
  if (hi - lo < 1e-12) {            // a flat line: give it room above and below
    const double pad = std::max(std::abs(hi) * 0.1, 1e-6);
    lo -= pad, hi += pad;
  } else if (!unit_range) {
    const double pad = (hi - lo) * 0.05;
    lo = lo >= 0 && lo - pad < 0 ? 0 : lo - pad;
    hi += pad;
  }
  // Epoch e of n at x: one epoch sits in the middle, otherwise first and last at the edges.
  auto x_of = [&](size_t e) {
    return epochs <= 1 ? left + pw / 2 : left + pw * double(e) / double(epochs - 1);
  };
  auto y_of = [&](double v) { return top + ph * (1 - (v - lo) / (hi - lo)); };

  std::string svg = fmt::format(
      "<svg class=\"chart\" id=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"{}\">\n<text class=\"title\" x=\"{}\" y=\"18\">{}</text>\n",
      id, W, H, W, H, html_escape(title), left, html_escape(title));
  svg += fmt::format(
      "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", left, top, pw, ph);
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4, y = y_of(v);
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        left, left + pw, y, y, left - 6, y + 4, tick_label(v, percent));
  }
  const size_t step = std::max<size_t>(1, (epochs + 9) / 10);  // at most ~10 epoch labels
  for (size_t e = 0; e < epochs; e += step)
    svg += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        x_of(e), top + ph + 16, e + 1);
  svg += fmt::format(
      "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>\n",
      left + pw / 2, H - 6);
  double legend_x = left + pw;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    legend_x -= 12 + 7.5 * double(it->name.size()) + 16;
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"8\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text class=\"legend\" x=\"{:.1f}\" y=\"18\">{}</text>\n",
        legend_x, it->color, legend_x + 16, html_escape(it->name));
  }
  for (const Series& s : series) {
    std::string points, dots;
    for (size_t e = 0; e < s.values.size(); ++e) {
      if (!s.values[e] || !std::isfinite(*s.values[e])) continue;
      const double x = x_of(e), y = y_of(*s.values[e]);
      points += fmt::format("{:.1f},{:.1f} ", x, y);
      dots += fmt::format(
          "<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\">"
          "<title>{} epoch {}: {:.6g}</title></circle>\n",
          x, y, s.color, html_escape(s.name), e + 1, *s.values[e]);
    }
    svg += fmt::format(
        "<g class=\"series\" data-series=\"{}\">\n<polyline fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\" points=\"{}\"/>\n{}</g>\n",
        html_escape(s.name), s.color, points, dots);
  }
  return svg + "</svg>\n";
}

std::string heat_map(
    const std::string& id,
    const std::vector<std::vector<int64_t>>& confusion,
    const std::vector<std::string>& classes) {
  const size_t c = confusion.size();
  size_t longest = 4;
  for (const auto& name : classes) longest = std::max(longest, name.size());
  const double label = std::min(7.0 * double(longest) + 12, 200.0) + 20;  // + "true class"
  const double cell = std::clamp(520.0 / double(std::max<size_t>(c, 1)), 6.0, 40.0);
  const double side = cell * double(c), W = label + side + 20, H = label + side + 30;
  const bool counts = cell >= 22;  // numbers fit inside the cell
  std::string svg = fmt::format(
      "<svg class=\"chart heatmap\" id=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "role=\"img\" aria-label=\"confusion matrix\">\n",
      id, W, H, W, H);
  svg += fmt::format(
      "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">predicted class</text>\n",
      label + side / 2, H - 8);
  svg += fmt::format(
      "<text class=\"axis\" transform=\"translate(14,{}) rotate(-90)\" "
      "text-anchor=\"middle\">true class</text>\n",
      label + side / 2);
  for (size_t i = 0; i < c; ++i) {
    const std::string name = html_escape(i < classes.size() ? classes[i] : std::to_string(i));
    const double mid = label + cell * (double(i) + 0.5);
    svg += fmt::format(
        "<text class=\"tick rowname\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n"
        "<text class=\"tick colname\" transform=\"translate({:.1f},{}) rotate(-60)\">{}</text>\n",
        label - 6, mid + 4, name, mid + 4, label - 6, name);
  }
  for (size_t i = 0; i < c; ++i) {
    int64_t row_total = 0;
    for (int64_t v : confusion[i]) row_total += v;
    for (size_t j = 0; j < c; ++j) {
      const int64_t v = confusion[i][j];
      const double share = row_total ? double(v) / double(row_total) : 0;
      // Diagonal (correct) in blue, mistakes in red, both fading to white at zero.
      const int hue = i == j ? 215 : 5;
      const double x = label + cell * double(j), y = label + cell * double(i);
      svg += fmt::format(
          "<rect class=\"cell\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
          "fill=\"{}\"><title>true {} / predicted {}: {}</title></rect>\n",
          x, y, cell, cell,
          v ? fmt::format("hsl({},70%,{:.0f}%)", hue, 92 - 50 * share) : std::string("#fcfcfc"),
          html_escape(classes.size() > i ? classes[i] : ""),
          html_escape(classes.size() > j ? classes[j] : ""), v);
      if (counts && v)
        svg += fmt::format(
            "<text class=\"count\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\"{}>{}</text>\n",
            x + cell / 2, y + cell / 2 + 4, share > 0.55 ? " fill=\"#fff\"" : "", v);
    }
  }
  return svg + "</svg>\n";
}

}  // namespace ignis_cli
