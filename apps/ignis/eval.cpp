// `ignis eval`: evaluates saved weights on one part of a data set and prints the same tables
// as `ignis train`. With --run DIR everything comes from the run's config.json (model, data,
// split, seed, limit, normalisation), so the parts are exactly the ones the run used and the
// test numbers are the run's; with --weights FILE the model and data are named on the command
// line (or taken from the file's metadata) and the split from --split/--seed/--limit.
#include <fmt/format.h>
#include <ignis/ignis.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "evaluate.h"
#include "model_setup.h"
#include "options.h"
#include "report.h"
#include "train_data.h"

namespace ig = ignis;
namespace fs = std::filesystem;

namespace ignis_cli {
namespace {

// The training options a run recorded, as far as the data and the model depend on them.
TrainOptions options_from_run(const std::string& dir, nlohmann::json& config) {
  if (!fs::is_directory(dir))
    throw UsageError(fmt::format(
        "--run {}: no such directory; pass a run directory written by 'ignis train'", dir));
  const fs::path cfg = fs::path(dir) / "config.json";
  std::ifstream in(cfg);
  if (!in)
    throw UsageError(fmt::format(
        "--run {}: no config.json there; pass a run directory written by 'ignis train'", dir));
  try {
    in >> config;
    TrainOptions o;
    o.model = config.at("model");
    o.data = config.at("data");
    o.data_dir = config.at("data_dir");
    o.split = config.at("split");
    o.seed = config.at("seed");
    o.limit = config.at("limit");
    o.image_size = config.value("image_size", o.image_size);  // imagefolder runs
    o.batch_size = config.at("batch_size");
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format(
        "--run {}: config.json is unreadable ({}); pass a run directory written by "
        "'ignis train'",
        dir,
        e.what()));
  }
}

// ig::load's message lists every missing key; one line of it is enough to see the mismatch.
std::string shorten(std::string text) {
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text.size() > 300 ? text.substr(0, 297) + "..." : text;
}

}  // namespace

int run_eval(const EvalOptions& e) {
  if (e.run.empty() == e.weights.empty())
    throw UsageError(
        "give either --run DIR (a run of 'ignis train') or --weights FILE with --model and "
        "--data");
  nlohmann::json config;
  TrainOptions o;
  std::string weights = e.weights;
  if (!e.run.empty()) {
    o = options_from_run(e.run, config);
    weights = (fs::path(e.run) / "model.safetensors").string();
    if (!fs::is_regular_file(weights))
      throw UsageError(fmt::format(
          "--run {}: no model.safetensors there (the run did not finish); train it again", e.run));
  } else {
    if (!fs::is_regular_file(weights))
      throw UsageError(fmt::format("--weights {}: no such file", weights));
    std::map<std::string, std::string> meta;
    try {
      meta = ig::load_file(weights).metadata;
    } catch (const ig::Error& err) {
      throw UsageError(fmt::format(
          "--weights {}: not a readable safetensors file ({})", weights, shorten(err.what())));
    }
    o.model = !e.model.empty() ? e.model : meta.count("model") ? meta["model"] : "";
    o.data = !e.data.empty() ? e.data : meta.count("data") ? meta["data"] : "";
    if (o.model.empty() || o.data.empty())
      throw UsageError(fmt::format(
          "--weights {}: the file does not say which model and data it is for; pass --model "
          "and --data",
          weights));
    o.data_dir = e.data_dir;
    o.split = e.split;
    o.seed = e.seed;
    o.limit = e.limit;
    o.image_size = e.image_size;
    o.batch_size = e.batch_size;
  }
  o.workers = e.workers;
  std::string why;
  const ig::Device device = resolve_device(e.device, why);
  TrainData d = load_train_data(o);
  // The run's recorded normalisation, so a change in how statistics are computed can never
  // shift an old run's inputs.
  if (config.contains("mean") && config.contains("std")) {
    d.mean = config["mean"].get<std::vector<double>>();
    d.std = config["std"].get<std::vector<double>>();
  }
  const ig::data::DatasetPtr set = e.part == "train" ? d.train : e.part == "val" ? d.val : d.test;
  if (set->size() == 0)
    throw UsageError(
        fmt::format("--part {}: that part of the split is empty; choose another --part", e.part));

  std::unique_ptr<ig::nn::Module> model = make_model(o.model, d);
  try {
    ig::load(*model, weights);
  } catch (const ig::Error& err) {
    throw UsageError(fmt::format(
        "{}: the weights do not fit model '{}' for {} ({}); pass the --model and --data they "
        "were trained with",
        weights,
        o.model,
        o.data,
        shorten(err.what())));
  }
  model->to(device);
  fmt::print("device  {} ({})\n", device.str(), why);
  fmt::print("model   {} ({} parameters) from {}\n", o.model, model->num_parameters(), weights);
  fmt::print("data    {}: {} part, {} samples; {}\n", o.data, e.part, set->size(), d.split_note);

  auto loader = make_eval_loader(set, d, 2 * o.batch_size, o.workers, device, o.seed);
  const int64_t num_classes = int64_t(d.classes.size());
  EvalResult r = evaluate(*model, *loader, num_classes);
  fmt::print(
      "\n{} set ({} samples): {}\n\n{}",
      e.part,
      r.n,
      format_summary(r),
      format_report(r.metrics, d.classes));
  return 0;
}

}  // namespace ignis_cli
