// report.html (see report_html.h). Every string that came from the user or the data set
// (class names, paths, option values) goes through html_escape.
#include "report_html.h"

#include <fmt/format.h>
#include <ignis/ignis.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "options.h"
#include "report.h"
#include "report_svg.h"

namespace ignis_cli {
namespace {

using nlohmann::json;

std::optional<double> number(const json& rec, const char* key) {
  if (!rec.contains(key) || !rec[key].is_number()) return std::nullopt;
  return rec[key].get<double>();
}

// A recorded number as text; metrics.jsonl writes a non-finite value (a diverged loss, an
// epoch whose steps were all skipped by --on-nonfinite skip) as null, shown as "n/a".
// Percentages (scale 100) get two decimals, other numbers four.
std::string number_text(const json& rec, const char* key, double scale = 1, const char* suffix = "") {
  const std::optional<double> v = number(rec, key);
  if (!v) return "n/a";
  return fmt::format("{:.{}f}{}", scale * *v, scale == 100 ? 2 : 4, suffix);
}

std::string value_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

const char* kStyle = R"(<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.summary{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.summary div{background:#f3f5f8;border-radius:6px;padding:8px 14px}
.summary b{display:block;font-size:18px}
.charts{display:flex;flex-wrap:wrap;gap:16px}
svg .title{font-size:14px;font-weight:600}svg .tick,svg .legend,svg .count{font-size:11px}
svg .axis{font-size:12px}svg .plot{fill:#fafbfc;stroke:#ccc}svg .grid{stroke:#e3e3e3}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;border-bottom:1px solid #e5e5e5}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{text-align:left;background:#f3f5f8}
tr.avg td{font-weight:600}
</style>
)";

std::string curves(const std::vector<json>& epochs) {
  Series train_loss{"train", "#1f77b4", {}}, val_loss{"validation", "#ff7f0e", {}};
  Series train_acc{"train", "#1f77b4", {}}, val_acc{"validation", "#ff7f0e", {}};
  Series lr{"learning rate", "#2ca02c", {}};
  for (const json& e : epochs) {
    train_loss.values.push_back(number(e, "train_loss"));
    val_loss.values.push_back(number(e, "val_loss"));
    train_acc.values.push_back(number(e, "train_accuracy"));
    val_acc.values.push_back(number(e, "val_accuracy"));
    lr.values.push_back(number(e, "lr"));
  }
  return "<h2>Training curves</h2>\n<div class=\"charts\">\n" +
         line_chart("loss-chart", "Loss", {train_loss, val_loss}, false, false) +
         line_chart("accuracy-chart", "Accuracy", {train_acc, val_acc}, true, true) +
         line_chart("lr-chart", "Learning rate (end of epoch)", {lr}, false, false) + "</div>\n";
}

std::string scores_table(const json& test, const std::vector<std::string>& classes) {
  std::string t =
      "<table id=\"scores\">\n<tr><th>class</th><th>precision</th><th>recall</th><th>F1</th>"
      "<th>support</th></tr>\n";
  auto row = [&](const std::string& name, const json& s, const char* cls) {
    t += fmt::format(
        "<tr{}><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
        cls, html_escape(name), number_text(s, "precision"),
        number_text(s, "recall"), number_text(s, "f1"),
        s.value("support", int64_t(0)));
  };
  const json& per_class = test["per_class"];
  for (size_t k = 0; k < per_class.size(); ++k)
    row(k < classes.size() ? classes[k] : std::to_string(k), per_class[k], "");
  row("macro avg", test["macro"], " class=\"avg\"");
  row("weighted avg", test["weighted"], " class=\"avg\"");
  return t + "</table>\n";
}

}  // namespace

std::string render_html_report(const json& config, const std::vector<json>& records) {
  std::vector<json> epochs;
  const json* test = nullptr;
  for (const json& r : records) {
    if (r.value("type", "") == "epoch") epochs.push_back(r);
    if (r.value("type", "") == "test") test = &r;
  }
  const std::vector<std::string> classes =
      config.value("classes", std::vector<std::string>{});
  const std::string title = fmt::format(
      "{} on {}", config.value("model", std::string("model")),
      config.value("data", std::string("data")));

  // Throughput over the whole run: training samples over training time, from each epoch's
  // samples/s (the epoch time also holds validation, so it would understate it).
  const double train_size = config.value("train_size", 0.0);
  double samples = 0, seconds = 0;
  for (const json& e : epochs)
    if (auto sps = number(e, "train_samples_per_s"); sps && *sps > 0)
      samples += train_size, seconds += train_size / *sps;

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += fmt::format("<title>ignis report: {}</title>\n{}</head>\n<body>\n", html_escape(title), kStyle);
  html += fmt::format("<h1>{}</h1>\n<div>run {}</div>\n", html_escape(title),
                      html_escape(config.value("out", std::string())));
  html += "<div class=\"summary\" id=\"summary\">\n";
  auto tile = [&](const std::string& label, const std::string& value) {
    html += fmt::format("<div>{}<b>{}</b></div>\n", html_escape(label), html_escape(value));
  };
  if (test) {
    tile("test accuracy", number_text(*test, "test_accuracy", 100, "%"));
    if (test->contains("test_top5_accuracy"))
      tile("top-5", number_text(*test, "test_top5_accuracy", 100, "%"));
    tile("test loss", number_text(*test, "test_loss"));
    tile("best epoch", fmt::format("{} of {}", test->value("best_epoch", 0), epochs.size()));
  }
  tile("device", value_text(config.value("device", json("?"))));
  if (seconds > 0) tile("training throughput", fmt::format("{:.0f} samples/s", samples / seconds));
  if (test && number(*test, "wall_time_s"))
    tile("total time", duration_text(*number(*test, "wall_time_s")));
  html += "</div>\n" + curves(epochs);
  if (test) {
    html += fmt::format("<h2>Test set ({} samples)</h2>\n<div class=\"charts\">\n",
                        test->value("test_samples", int64_t(0)));
    html += heat_map("confusion-heatmap",
                     test->value("confusion", std::vector<std::vector<int64_t>>{}), classes);
    html += "<div>" + scores_table(*test, classes) + "</div>\n</div>\n";
  }
  html += "<h2>Configuration</h2>\n<table id=\"config\">\n";
  for (const auto& [key, value] : config.items()) {
    if (key == "classes") continue;  // shown with the scores and the heat map
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(key),
                        html_escape(value_text(value)));
  }
  return html + "</table>\n</body>\n</html>\n";
}

std::string write_html_report(const std::string& run_dir) {
  namespace fs = std::filesystem;
  const fs::path dir(run_dir);
  json config;
  std::vector<json> records;
  try {
    std::ifstream(dir / "config.json") >> config;
    std::ifstream log(dir / "metrics.jsonl");
    for (std::string line; std::getline(log, line);)
      if (!line.empty()) records.push_back(json::parse(line));
  } catch (const json::exception& e) {
    throw UsageError(fmt::format(
        "{}: config.json or metrics.jsonl is not valid JSON ({}); was the run directory edited?",
        run_dir, e.what()));
  }
  const fs::path out = dir / "report.html";
  try {  // replaced atomically, like every other file of the run
    ignis::write_file_atomic(out.string(), render_html_report(config, records));
  } catch (const ignis::Error& e) {
    throw UsageError(
        fmt::format("{}: cannot write report.html ({}); check the disk", run_dir, e.what()));
  }
  return out.string();
}

}  // namespace ignis_cli
