// Classification metrics from predictions (see report.h). Plain loops over int64 vectors:
// the inputs are at most a data set's labels, so there is nothing here worth a kernel.
#include "report.h"

#include <fmt/format.h>

#include <algorithm>

namespace ignis_cli {

ClassificationReport classification_report(
    const std::vector<int64_t>& labels,
    const std::vector<int64_t>& predictions,
    int64_t num_classes) {
  ClassificationReport r;
  const size_t c = size_t(num_classes);
  r.confusion.assign(c, std::vector<int64_t>(c, 0));
  int64_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    r.confusion[size_t(labels[i])][size_t(predictions[i])] += 1;
    correct += labels[i] == predictions[i];
  }
  const int64_t n = int64_t(labels.size());
  r.accuracy = n ? double(correct) / double(n) : 0;
  r.per_class.resize(c);
  for (size_t k = 0; k < c; ++k) {
    int64_t tp = r.confusion[k][k], predicted = 0, actual = 0;
    for (size_t j = 0; j < c; ++j) {
      predicted += r.confusion[j][k];
      actual += r.confusion[k][j];
    }
    ClassScores& s = r.per_class[k];
    s.support = actual;
    s.precision = predicted ? double(tp) / double(predicted) : 0;
    s.recall = actual ? double(tp) / double(actual) : 0;
    s.f1 = s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0;
  }
  // Macro: the plain mean over classes; weighted: each class counts by its support.
  for (const ClassScores& s : r.per_class) {
    r.macro.precision += s.precision / double(c);
    r.macro.recall += s.recall / double(c);
    r.macro.f1 += s.f1 / double(c);
    if (n) {
      const double w = double(s.support) / double(n);
      r.weighted.precision += w * s.precision;
      r.weighted.recall += w * s.recall;
      r.weighted.f1 += w * s.f1;
    }
  }
  r.macro.support = r.weighted.support = n;
  return r;
}

std::string format_report(const ClassificationReport& r, const std::vector<std::string>& classes) {
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
  auto row = [&](const std::string& name, const ClassScores& s) {
    out += fmt::format(
        "{:<{}}  {:>9.4f}  {:>9.4f}  {:>9.4f}  {:>8}\n",
        name,
        name_w,
        s.precision,
        s.recall,
        s.f1,
        s.support);
  };
  for (size_t k = 0; k < r.per_class.size(); ++k) row(classes[k], r.per_class[k]);
  out += "\n";
  row("macro avg", r.macro);
  row("weighted avg", r.weighted);

  const size_t c = r.confusion.size();
  if (c > 20) {
    return out +
           fmt::format(
               "\n(confusion matrix: {} x {} classes, written to metrics.jsonl only)\n", c, c);
  }
  // Columns are headed by class index (names are too wide for ten columns); rows carry both.
  int64_t biggest = 1;
  for (const auto& rowv : r.confusion)
    for (int64_t v : rowv) biggest = std::max(biggest, v);
  const size_t cell = std::max<size_t>(fmt::formatted_size("{}", biggest), 3);
  const size_t label_w = name_w + 5;
  out += fmt::format("\nconfusion matrix (rows: true class, columns: predicted class)\n");
  out += fmt::format("{:<{}}", "", label_w);
  for (size_t j = 0; j < c; ++j) out += fmt::format(" {:>{}}", j, cell);
  out += "\n";
  for (size_t i = 0; i < c; ++i) {
    out += fmt::format("{:>2} {:<{}}  ", i, classes[i], name_w);
    for (size_t j = 0; j < c; ++j) out += fmt::format(" {:>{}}", r.confusion[i][j], cell);
    out += "\n";
  }
  return out;
}

nlohmann::json to_json(const ClassificationReport& r) {
  auto scores = [](const ClassScores& s) {
    return nlohmann::json{
        {"precision", s.precision}, {"recall", s.recall}, {"f1", s.f1}, {"support", s.support}};
  };
  nlohmann::json per_class = nlohmann::json::array();
  for (const ClassScores& s : r.per_class) per_class.push_back(scores(s));
  return {
      {"per_class", per_class},
      {"macro", scores(r.macro)},
      {"weighted", scores(r.weighted)},
      {"confusion", r.confusion}};
}

}  // namespace ignis_cli
