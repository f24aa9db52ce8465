// Classification tables for the terminal and metrics.jsonl (see report.h).
#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ignis_cli {
namespace {

using ignis::metrics::ClassificationMetrics;
using ignis::metrics::PRF;

std::vector<std::vector<int64_t>> confusion_rows(const ClassificationMetrics& m) {
  const int64_t c = m.num_classes();
  const std::vector<int64_t> flat = m.confusion_matrix().to_vector<int64_t>();
  std::vector<std::vector<int64_t>> rows;
  for (int64_t i = 0; i < c; ++i) rows.emplace_back(flat.begin() + i * c, flat.begin() + (i + 1) * c);
  return rows;
}

}  // namespace

std::string duration_text(double s) {
  if (s < 120) return fmt::format("{:.1f} s", s);
  return fmt::format("{:.0f} min {:.0f} s", std::floor(s / 60), std::fmod(s, 60));
}

std::string format_report(const ClassificationMetrics& m, const std::vector<std::string>& classes) {
  size_t name_w = std::string("weighted avg").size();
  for (const auto& s : classes) name_w = std::max(name_w, s.size());
  std::string out = fmt::format(
      "{:<{}}  {:>9}  {:>9}  {:>9}  {:>8}\n",
      "class",
      name_w,
      "precision",
      "recall",
      "f1",
      "support");
  auto row = [&](const std::string& name, const PRF& s, int64_t support) {
    out += fmt::format(
        "{:<{}}  {:>9.4f}  {:>9.4f}  {:>9.4f}  {:>8}\n",
        name,
        name_w,
        s.precision,
        s.recall,
        s.f1,
        support);
  };
  const std::vector<PRF> per_class = m.per_class();
  const std::vector<int64_t> support = m.support();
  for (size_t k = 0; k < per_class.size(); ++k) row(classes[k], per_class[k], support[k]);
  out += "\n";
  row("macro avg", m.macro_average(), m.num_samples());
  row("weighted avg", m.weighted_average(), m.num_samples());

  const size_t c = size_t(m.num_classes());
  if (c > 20) {
    return out +
           fmt::format(
               "\n(confusion matrix: {} x {} classes, written to metrics.jsonl only)\n", c, c);
  }
  // Columns are headed by class index (names are too wide for ten columns); rows carry both.
  const auto confusion = confusion_rows(m);
  int64_t biggest = 1;
  for (const auto& rowv : confusion)
    for (int64_t v : rowv) biggest = std::max(biggest, v);
  const size_t cell = std::max<size_t>(fmt::formatted_size("{}", biggest), 3);
  const size_t label_w = name_w + 5;
  out += fmt::format("\nconfusion matrix (rows: true class, columns: predicted class)\n");
  out += fmt::format("{:<{}}", "", label_w);
  for (size_t j = 0; j < c; ++j) out += fmt::format(" {:>{}}", j, cell);
  out += "\n";
  for (size_t i = 0; i < c; ++i) {
    out += fmt::format("{:>2} {:<{}}  ", i, classes[i], name_w);
    for (size_t j = 0; j < c; ++j) out += fmt::format(" {:>{}}", confusion[i][j], cell);
    out += "\n";
  }
  return out;
}

nlohmann::json to_json(const ClassificationMetrics& m) {
  auto scores = [](const PRF& s, int64_t support) {
    return nlohmann::json{
        {"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}, {"support", support}};
  };
  nlohmann::json per_class = nlohmann::json::array();
  const std::vector<PRF> pc = m.per_class();
  const std::vector<int64_t> support = m.support();
  for (size_t k = 0; k < pc.size(); ++k) per_class.push_back(scores(pc[k], support[k]));
  return {
      {"per_class", per_class},
      {"macro", scores(m.macro_average(), m.num_samples())},
      {"weighted", scores(m.weighted_average(), m.num_samples())},
      {"confusion", confusion_rows(m)}};
}

}  // namespace ignis_cli
