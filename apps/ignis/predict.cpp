// `ignis predict`: the top-k classes of image files under a trained run's model.
//
// Everything about the input comes from the run's config.json: the model, the data set it was
// trained on (which fixes the channels and the side of the square input), --image-size for
// imagefolder runs, the per-channel mean and std of the training part, and the class names.
// Each image goes through what an imagefolder sample goes through in training: decoded by
// read_image (PNG/JPEG, told by its bytes), grey repeated to RGB or RGB turned grey as the run
// needs, the shorter side resized to the input side and centre-cropped (ImageFolder::load),
// then ToFloat and Normalize with the run's statistics, on --device.
//
// Failures: every image is decoded before any is predicted, and the first that cannot be read
// ends the command (exit 2, one line naming the file) with nothing on stdout. A table or CSV
// that is missing rows looks complete to a script reading it, so a bad file is reported
// instead of skipped; remove or fix it and run again.
#include <fmt/format.h>
#include <ignis/ignis.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model_setup.h"
#include "options.h"

namespace ig = ignis;
namespace fs = std::filesystem;
using nlohmann::json;

namespace ignis_cli {
namespace {

// What the run says about its input and output.
struct RunModel {
  std::string model, data, weights;
  int64_t channels = 0, side = 0;
  std::vector<double> mean, std;
  std::vector<std::string> classes;
};

// The square input side of the data sets the trainer reads (see train_data.cpp).
int64_t input_side(const std::string& data, int64_t image_size) {
  if (data == "fashion-mnist" || data == "mnist" || data == "synthetic") return 28;
  if (data == "cifar10" || data == "cifar100") return 32;
  return image_size;  // imagefolder:PATH
}

// RUN_DIR_OR_MODEL: a run directory, or a weights file whose directory holds the run's
// config.json (e.g. RUN/model.safetensors).
RunModel open_run(const std::string& arg) {
  RunModel r;
  fs::path dir = arg;
  if (fs::is_regular_file(arg)) {
    r.weights = arg;
    dir = fs::path(arg).parent_path();
    if (dir.empty()) dir = ".";
  } else if (fs::is_directory(arg)) {
    r.weights = (dir / "model.safetensors").string();
    if (!fs::is_regular_file(r.weights))
      throw UsageError(fmt::format(
          "{}: no model.safetensors in this run directory (the run did not finish); train it "
          "again or pass a model file",
          arg));
  } else {
    throw UsageError(fmt::format(
        "{}: no such run directory or model file; pass a run directory of 'ignis train'", arg));
  }
  const fs::path cfg = dir / "config.json";
  std::ifstream in(cfg);
  if (!in)
    throw UsageError(fmt::format(
        "{}: no config.json beside the model (it holds the classes and the normalisation); "
        "pass a run directory of 'ignis train'",
        cfg.string()));
  try {
    json c;
    in >> c;
    r.model = c.at("model");
    r.data = c.at("data");
    r.classes = c.at("classes").get<std::vector<std::string>>();
    r.mean = c.at("mean").get<std::vector<double>>();
    r.std = c.at("std").get<std::vector<double>>();
    r.channels = int64_t(r.mean.size());
    r.side = input_side(r.data, c.value("image_size", int64_t(32)));
  } catch (const json::exception& e) {
    throw UsageError(fmt::format(
        "{}: unreadable ({}); pass a run directory of 'ignis train'", cfg.string(), e.what()));
  }
  if (r.data.rfind("csv:", 0) == 0)
    throw UsageError(fmt::format(
        "{}: the run was trained on {} (rows of numbers), not on images; predict takes image "
        "runs",
        arg,
        r.data));
  if ((r.channels != 1 && r.channels != 3) || r.std.size() != r.mean.size() || r.classes.empty())
    throw UsageError(fmt::format(
        "{}: config.json holds {} means, {} stds and {} classes; expected 1 or 3 channels",
        cfg.string(),
        r.mean.size(),
        r.std.size(),
        r.classes.size()));
  return r;
}

// The image files the arguments name: a file as it is (its bytes decide the format), a
// directory's .png/.jpg/.jpeg files recursively, sorted by path (as ImageFolder lists them).
std::vector<std::string> list_inputs(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    if (fs::is_directory(a)) {
      const std::vector<std::string> found = ig::data::list_image_files(a);
      if (found.empty())
        throw UsageError(fmt::format(
            "{}: no .png, .jpg or .jpeg files in this directory; pass image files or a folder "
            "of them",
            a));
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(a)) {
      files.push_back(a);
    } else {
      throw UsageError(fmt::format("{}: no such file or directory", a));
    }
  }
  return files;
}

struct Prediction {
  std::vector<int64_t> index;
  std::vector<double> probability;
};

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

void print_table(
    const std::vector<std::string>& files,
    const std::vector<Prediction>& preds,
    const std::vector<std::string>& classes) {
  size_t wf = 5, wc = 5;  // "image", "class"
  for (const auto& f : files) wf = std::max(wf, f.size());
  for (const auto& p : preds)
    for (int64_t i : p.index) wc = std::max(wc, classes[size_t(i)].size());
  fmt::print("{:<{}}  {:>4}  {:<{}}  {:>11}\n", "image", wf, "rank", "class", wc, "probability");
  for (size_t n = 0; n < files.size(); ++n)
    for (size_t k = 0; k < preds[n].index.size(); ++k)
      fmt::print(
          "{:<{}}  {:>4}  {:<{}}  {:>11.4f}\n",
          k == 0 ? files[n] : "",
          wf,
          k + 1,
          classes[size_t(preds[n].index[k])],
          wc,
          preds[n].probability[k]);
}

}  // namespace

int run_predict(const PredictOptions& p) {
  const RunModel r = open_run(p.run);
  const std::vector<std::string> files = list_inputs(p.images);
  std::string why;
  const ig::Device device = resolve_device(p.device, why);
  const int64_t num_classes = int64_t(r.classes.size());
  const int64_t k = std::min<int64_t>(p.top_k, num_classes);

  // All images first (see the top of the file): uint8 [N, C, side, side].
  ig::Tensor images = ig::empty({int64_t(files.size()), r.channels, r.side, r.side}, ig::kUInt8);
  for (size_t i = 0; i < files.size(); ++i) {
    try {
      images[int64_t(i)].copy_(ig::data::ImageFolder::load(files[i], r.side, r.channels));
    } catch (const ig::IOError& e) {
      throw UsageError(fmt::format("{}; predict needs every image readable", e.what()));
    }
  }

  std::unique_ptr<ig::nn::Module> model =
      make_model(r.model, r.channels, r.side, r.side, num_classes);
  try {
    ig::load(*model, r.weights);
  } catch (const ig::Error& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    throw UsageError(fmt::format(
        "{}: the weights do not fit model '{}' of the run's config.json ({})",
        r.weights,
        r.model,
        what.substr(0, 300)));
  }
  model->to(device);
  model->eval();
  ig::NoGradGuard no_grad;

  const ig::data::ToFloat to_float;
  const ig::data::Normalize normalize(r.mean, r.std);
  const ig::data::TransformContext ctx;
  std::vector<Prediction> preds(files.size());
  const int64_t chunk = 256;  // bounds the activations' memory for long lists of images
  for (int64_t lo = 0; lo < int64_t(files.size()); lo += chunk) {
    const int64_t len = std::min<int64_t>(chunk, int64_t(files.size()) - lo);
    const ig::Tensor x = normalize(to_float(images.narrow(0, lo, len).to(device), ctx), ctx);
    const ig::Tensor prob = ig::softmax((*model)(x).to(ig::kFloat64), 1);
    auto [values, indices] = ig::topk(prob, k, 1);
    const ig::Tensor v = values.cpu().contiguous(), ix = indices.cpu().contiguous();
    for (int64_t n = 0; n < len; ++n) {
      Prediction& out = preds[size_t(lo + n)];
      for (int64_t j = 0; j < k; ++j) {
        out.probability.push_back(v.data_ptr<double>()[n * k + j]);
        out.index.push_back(ix.data_ptr<int64_t>()[n * k + j]);
      }
    }
  }

  if (p.format == "csv") {
    fmt::print("image,rank,class,index,probability\n");
    for (size_t n = 0; n < files.size(); ++n)
      for (size_t j = 0; j < preds[n].index.size(); ++j)
        fmt::print(
            "{},{},{},{},{:.9g}\n",
            csv_field(files[n]),
            j + 1,
            csv_field(r.classes[size_t(preds[n].index[j])]),
            preds[n].index[j],
            preds[n].probability[j]);
  } else if (p.format == "json") {
    json out = json::array();
    for (size_t n = 0; n < files.size(); ++n) {
      json top = json::array();
      for (size_t j = 0; j < preds[n].index.size(); ++j)
        top.push_back(
            {{"class", r.classes[size_t(preds[n].index[j])]},
             {"index", preds[n].index[j]},
             {"probability", preds[n].probability[j]}});
      out.push_back({{"image", files[n]}, {"top", top}});
    }
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print(
        "model   {} from {} ({} classes, {}x{}x{} input) on {} ({})\n\n",
        r.model,
        r.weights,
        num_classes,
        r.channels,
        r.side,
        r.side,
        device.str(),
        why);
    print_table(files, preds, r.classes);
  }
  return 0;
}

}  // namespace ignis_cli
