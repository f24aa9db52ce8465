// `ignis`: the command-line trainer. This file holds only the command line (CLI11
// subcommands with long options) and the top-level error policy:
//   - a bad flag, value or combination prints one line "ignis: error: <what and how to fix>"
//     and exits 2, never a stack trace;
//   - any ignis::Error that escapes (a corrupt data file, a missing kernel) is reported the
//     same way, with its "[component]" message, and also exits 2.
// The work is in train.cpp (train) and devices.cpp (devices).
#include <fmt/format.h>
#include <ignis/ignis.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>

#include "options.h"
#include "train_data.h"

namespace {

// CLI11's PositiveNumber prints DBL_MAX in full when it fails; these say it in words.
CLI::Validator number_check(bool allow_zero, bool integer) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t used = 0;
        double v = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        const char* kind = integer ? (allow_zero ? "a whole number >= 0" : "a whole number >= 1")
                                   : (allow_zero ? "a number >= 0" : "a number > 0");
        if (used == 0 || used != text.size() || !(allow_zero ? v >= 0 : v > 0) ||
            (integer && v != double(int64_t(v))))
          return fmt::format("'{}' is not {}", text, kind);
        return {};
      },
      integer ? (allow_zero ? "INT>=0" : "INT>=1") : (allow_zero ? "NUMBER>=0" : "NUMBER>0"));
}
const CLI::Validator kPositiveInt = number_check(false, true);
const CLI::Validator kNonNegativeInt = number_check(true, true);
const CLI::Validator kPositive = number_check(false, false);
const CLI::Validator kNonNegative = number_check(true, false);

int fail(const std::string& what) {
  std::fflush(stdout);
  fmt::print(stderr, "ignis: error: {}\n", what);
  return 2;
}

void add_train_options(CLI::App& train, ignis_cli::TrainOptions& o) {
  train
      .add_option(
          "--model",
          o.model,
          "Model: mlp, cnn, resnet18, resnet34, resnet50 (default: cnn on the CPU, "
          "resnet18 on a GPU)")
      ->check(CLI::IsMember({"mlp", "cnn", "resnet18", "resnet34", "resnet50"}));
  train
      .add_option(
          "--data",
          o.data,
          "Data set: fashion-mnist, mnist, cifar10, cifar100, synthetic, imagefolder:PATH (one "
          "subfolder of PNG/JPEG files per class) or csv:PATH (numeric columns, label last; "
          "--model mlp)")
      ->check(CLI::Validator(
          [](std::string& v) { return ignis_cli::check_data_spec(v); }, "DATA"))
      ->capture_default_str();
  train
      .add_option(
          "--image-size",
          o.image_size,
          "imagefolder: images are resized (shorter side) and centre-cropped to this square "
          "(default 32, for small images)")
      ->check(kPositiveInt)
      ->capture_default_str();
  train.add_option(
      "--data-dir",
      o.data_dir,
      "Directory of the data set's files (default: Debian's location under "
      "/usr/share/datasets)");
  train
      .add_option(
          "--split",
          o.split,
          "train,validation,test fractions. The data set's train and test files are "
          "POOLED and split at random from --seed; 'official' keeps the official test "
          "set and holds out 10% of the training set for validation")
      ->capture_default_str();
  train.add_option("--epochs", o.epochs, "Epochs (default: 8)")->check(kPositiveInt);
  train.add_option("--batch-size", o.batch_size, "Batch size")
      ->check(kPositiveInt)
      ->capture_default_str();
  train.add_option("--optimizer", o.optimizer, "sgd, adam, adamw, rmsprop")
      ->check(CLI::IsMember({"sgd", "adam", "adamw", "rmsprop"}))
      ->capture_default_str();
  train
      .add_option(
          "--lr",
          o.lr,
          "Learning rate (peak lr with onecycle; default: 0.05 for sgd, 0.001 for "
          "adam/adamw/rmsprop)")
      ->check(kPositive);
  train.add_option("--momentum", o.momentum, "Momentum (sgd, rmsprop)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  train.add_flag("--nesterov,!--no-nesterov", o.nesterov, "Nesterov momentum (sgd; default on)");
  train.add_option("--weight-decay", o.weight_decay, "Weight decay")
      ->check(kNonNegative)
      ->capture_default_str();
  train.add_option("--schedule", o.schedule, "LR schedule: constant, step, cosine, onecycle")
      ->check(CLI::IsMember({"constant", "step", "cosine", "onecycle"}))
      ->capture_default_str();
  train
      .add_option(
          "--warmup",
          o.warmup,
          "Epochs of linear LR warm-up (onecycle: length of the rising phase; "
          "default 30% of the run)")
      ->check(kNonNegative);
  train.add_option("--label-smoothing", o.label_smoothing, "Label smoothing in [0, 1)")
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  train
      .add_option(
          "--augment",
          o.augment,
          "none, or standard: random crop (padding 4) + horizontal flip for 32x32 "
          "colour images, random crop only for 28x28 ones")
      ->check(CLI::IsMember({"none", "standard"}))
      ->capture_default_str();
  train.add_option("--device", o.device, "auto, cpu, cuda or cuda:N (auto: cuda when available)")
      ->capture_default_str();
  train
      .add_option("--workers", o.workers, "Data loader worker threads (0: load on the main thread)")
      ->check(kNonNegativeInt)
      ->capture_default_str();
  train
      .add_option(
          "--seed",
          o.seed,
          "Seed of the split, the initial weights, the shuffling and "
          "the augmentation")
      ->capture_default_str();
  train.add_option("--out", o.out, "Run directory (default: runs/<model>-<data>-<timestamp>)");
  train
      .add_option(
          "--limit",
          o.limit,
          "Use only the first N samples of the pooled data set (quick runs, tests); "
          "with --split official, the first N of each file")
      ->check(kPositiveInt);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ignis: train, evaluate and inspect models with the Ignis engine", "ignis"};
  app.require_subcommand(1);
  ignis_cli::TrainOptions train_opts;
  CLI::App* train = app.add_subcommand(
      "train", "Train a model, evaluate its best epoch on the test set, save it");
  add_train_options(*train, train_opts);
  CLI::App* devices = app.add_subcommand("devices", "Show the CPU and the CUDA devices");

  // An unknown first word would otherwise read "A subcommand is required", which hides the typo.
  if (argc > 1 && argv[1][0] != '-' && std::string(argv[1]) != "train" &&
      std::string(argv[1]) != "devices")
    return fail(fmt::format("unknown command '{}'; use 'ignis train' or 'ignis devices'", argv[1]));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    const char* sub = train->parsed() ? "ignis train --help" : "ignis --help";
    return fail(fmt::format("{}; see '{}'", what, sub));
  }

  try {
    if (train->parsed()) return ignis_cli::run_train(train_opts);
    if (devices->parsed()) return ignis_cli::run_devices();
  } catch (const ignis_cli::UsageError& e) {
    return fail(e.what());
  } catch (const ignis::Error& e) {
    return fail(e.what());
  }
  return 0;
}
