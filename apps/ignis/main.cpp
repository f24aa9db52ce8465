// `ignis`: the command-line trainer. This file holds only the command line (CLI11
// subcommands with long options, run_command_line in command_line.h) and the top-level error
// policy:
//   - a bad flag, value or combination prints one line "ignis: error: <what and how to fix>"
//     and exits 2, never a stack trace;
//   - any ignis::Error that escapes (a corrupt data file, a missing kernel) is reported the
//     same way, with its "[component]" message, and also exits 2; so is any other exception.
// The work is in train.cpp (train), eval.cpp (eval), predict.cpp (predict), bench.cpp (bench)
// and devices.cpp (devices).
#include <fmt/format.h>
#include <ignis/ignis.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "command_line.h"
#include "config_file.h"
#include "data_parallel.h"
#include "options.h"
#include "out_of_memory_report.h"
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
            (integer && v != std::floor(v)))
          return fmt::format("'{}' is not {}", text, kind);
        // Past int64's range the conversion is undefined (UBSan, on fuzz_cli input: --epochs 1e30).
        if (integer && !(v < 0x1p63))
          return fmt::format(
              "'{}' is too large (at most {})", text, std::numeric_limits<int64_t>::max());
        return {};
      },
      integer ? (allow_zero ? "INT>=0" : "INT>=1") : (allow_zero ? "NUMBER>=0" : "NUMBER>0"));
}
const CLI::Validator kPositiveInt = number_check(false, true);
const CLI::Validator kNonNegativeInt = number_check(true, true);
const CLI::Validator kPositive = number_check(false, false);
const CLI::Validator kNonNegative = number_check(true, false);
// --epochs: a whole number >= 1, or a positive fraction, which only --preset accepts (checked
// once every option is known).
const CLI::Validator kEpochs(
    [](std::string& text) -> std::string {
      const std::string whole = kPositiveInt(text);
      if (whole.empty() || whole.find("too large") != std::string::npos) return whole;
      return kPositive(text).empty() ? std::string() : whole;
    },
    "NUMBER>0");

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
      ->check(CLI::Validator([](std::string& v) { return ignis_cli::check_data_spec(v); }, "DATA"))
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
  train
      .add_option_function<std::string>(
          "--epochs",
          [&o](const std::string& v) {
            o.epochs_exact = std::stod(v);
            o.epochs = int64_t(o.epochs_exact);
          },
          "Epochs (default: 8); with --preset also a fraction, such as its own 9.9")
      ->check(kEpochs);
  train
      .add_option_function<std::string>(
          "--batch-size",
          [&o](const std::string& v) {
            o.batch_size_auto = v == "auto";
            if (!o.batch_size_auto) o.batch_size = std::stoll(v);
          },
          "Samples per optimizer step; with --accumulate N each step adds the gradients of N "
          "micro-batches of batch-size/N, so the sample order and the step stay the same. "
          "auto: on a GPU the largest batch whose training step fits (trial steps, 90% of it "
          "kept as a margin); on the CPU 128. config.json records the number chosen")
      ->check(CLI::Validator(
          [](std::string& v) {
            const std::string bad = v == "auto" ? std::string() : kPositiveInt(v);
            return bad.empty() ? bad : bad + " or auto";
          },
          "INT>=1|auto"))
      ->default_str("128");
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
  train
      .add_option(
          "--accumulate",
          o.accumulate,
          "Gradient accumulation: split each batch into N micro-batches (N must divide "
          "--batch-size)")
      ->check(kPositiveInt)
      ->capture_default_str();
  train
      .add_option(
          "--early-stop",
          o.early_stop,
          "Stop after N epochs without a better validation accuracy (0: off); the best epoch "
          "is still the one saved and tested")
      ->check(kNonNegativeInt)
      ->capture_default_str();
  train
      .add_option(
          "--on-nonfinite",
          o.on_nonfinite,
          "A NaN/Inf loss or gradient: stop (exit 2 naming the epoch and step) or skip that "
          "optimizer step (counted in metrics.jsonl)")
      ->check(CLI::IsMember({"stop", "skip"}))
      ->capture_default_str();
  train
      .add_option(
          "--amp",
          o.amp,
          "Mixed precision: off, bf16 (matmul/conv in bfloat16 under autocast) or fp16 "
          "(float16 under autocast, with a GradScaler that skips overflowing steps)")
      ->check(CLI::IsMember({"off", "bf16", "fp16"}))
      ->capture_default_str();
  train.add_flag(
      "--channels-last",
      o.channels_last,
      "Lay out the model's convolution weights channels-last (NHWC), so every convolution "
      "and the activations between them run NHWC (cuDNN's and oneDNN's NHWC kernels)");
  train.add_flag(
      "--sync-bn",
      o.sync_bn,
      "Under mpirun: batch-norm statistics over the whole global batch (all processes) instead "
      "of each process's share (SyncBatchNorm); no effect with one process");
  train
      .add_option(
          "--cuda-graphs",
          o.cuda_graphs,
          "On a GPU, capture the whole training step into a CUDA graph and replay it (auto: "
          "when the run allows it, falling back to eager steps with a message); off: eager")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  train.add_flag(
      "--profile-startup",
      o.profile_startup,
      "After the first training step, print one line `startup {...}` (JSON): the seconds from "
      "the process's start to the end of that step, and of each phase on the way");
  train.add_flag(
      "--detect-anomaly",
      o.detect_anomaly,
      "With a non-finite gradient, also name the first parameter (in registration order) "
      "whose gradient is NaN/Inf");
  train
      .add_option(
          "--checkpoint-every",
          o.checkpoint_every,
          "Also write the checkpoint every N optimizer steps (0: only after each epoch)")
      ->check(kNonNegativeInt)
      ->capture_default_str();
  train.add_option(
      "--config",
      o.config,
      "JSON or TOML file of options (keys are the long options: {\"epochs\": 3}); flags on "
      "the command line override it. A run's config.json repeats that run");
  train
      .add_option(
          "--preset",
          o.preset,
          "airbench94: Keller Jordan's CIFAR-10 speed recipe (94% test accuracy in ~10 epochs "
          "of a small whitened conv net), timed by its rules; takes --data-dir (the "
          "cifar-10-batches-bin files), --device, --seed, --out, --limit, --epochs, "
          "--batch-size (default 1024), --amp (default bf16 on a GPU) and --channels-last "
          "(always on a GPU)")
      ->check(CLI::IsMember({"airbench94"}));
  train.add_option(
      "--resume",
      o.resume,
      "Continue the interrupted run in DIR from its checkpoint.safetensors (its options come "
      "from DIR/config.json; flags that differ are refused)");
}

/// The first option set that --preset does not take ("" when there is none): given on the
/// command line, or (a config file's keys do not count as given) holding a value other than
/// its default.
std::string preset_conflict(const CLI::App& train, const ignis_cli::TrainOptions& o) {
  static const char* const kTaken[] = {"--preset", "--data-dir", "--device", "--seed",
                                       "--out", "--limit", "--epochs", "--batch-size",
                                       "--amp", "--channels-last", "--cuda-graphs",
                                       "--config"};
  for (const CLI::Option* option : train.get_options()) {
    if (option->count() == 0 || option->get_lnames().empty()) continue;
    const std::string flag = "--" + option->get_lnames().front();
    if (std::find(std::begin(kTaken), std::end(kTaken), flag) == std::end(kTaken)) return flag;
  }
  const ignis_cli::TrainOptions d;
  const std::pair<bool, const char*> changed[] = {
      {o.model != d.model, "--model"},
      {o.data != d.data, "--data"},
      {o.split != d.split, "--split"},
      {o.optimizer != d.optimizer, "--optimizer"},
      {!std::isnan(o.lr), "--lr"},
      {o.momentum != d.momentum, "--momentum"},
      {o.nesterov != d.nesterov, "--nesterov"},
      {o.weight_decay != d.weight_decay, "--weight-decay"},
      {o.schedule != d.schedule, "--schedule"},
      {o.warmup != d.warmup, "--warmup"},
      {o.label_smoothing != d.label_smoothing, "--label-smoothing"},
      {o.augment != d.augment, "--augment"},
      {o.workers != d.workers, "--workers"},
      {o.image_size != d.image_size, "--image-size"},
      {o.accumulate != d.accumulate, "--accumulate"},
      {o.early_stop != d.early_stop, "--early-stop"},
      {o.on_nonfinite != d.on_nonfinite, "--on-nonfinite"},
      {o.detect_anomaly, "--detect-anomaly"},
      {o.sync_bn, "--sync-bn"},
      {o.checkpoint_every != d.checkpoint_every, "--checkpoint-every"},
      {!o.resume.empty(), "--resume"},
      {o.profile_startup, "--profile-startup"},
      {o.batch_size_auto, "--batch-size auto"}};
  for (const auto& [differs, flag] : changed)
    if (differs) return flag;
  return "";
}

void add_eval_options(CLI::App& eval, ignis_cli::EvalOptions& o) {
  eval.add_option(
      "--run", o.run, "Run directory of 'ignis train' (config.json, model.safetensors)");
  eval.add_option("--weights", o.weights, "A safetensors file of weights (instead of --run)");
  eval.add_option("--model", o.model, "With --weights: mlp, cnn, resnet18, resnet34, resnet50")
      ->check(CLI::IsMember({"mlp", "cnn", "resnet18", "resnet34", "resnet50"}));
  eval.add_option(
          "--data",
          o.data,
          "With --weights: fashion-mnist, mnist, cifar10, cifar100, synthetic, imagefolder:PATH "
          "or csv:PATH")
      ->check(CLI::Validator([](std::string& v) { return ignis_cli::check_data_spec(v); }, "DATA"));
  eval.add_option("--image-size", o.image_size, "With --weights and imagefolder:PATH: image side")
      ->check(kPositiveInt)
      ->capture_default_str();
  eval.add_option("--data-dir", o.data_dir, "With --weights: directory of the data set's files");
  eval.add_option("--part", o.part, "Part of the split to evaluate: test, val or train")
      ->check(CLI::IsMember({"test", "val", "train"}))
      ->capture_default_str();
  eval.add_option("--split", o.split, "With --weights: train,validation,test fractions or official")
      ->capture_default_str();
  eval.add_option("--seed", o.seed, "With --weights: seed of the split")->capture_default_str();
  eval.add_option("--limit", o.limit, "With --weights: first N samples of the pool")
      ->check(kPositiveInt);
  eval.add_option(
          "--batch-size", o.batch_size, "With --weights: training batch size (evaluation uses 2x)")
      ->check(kPositiveInt)
      ->capture_default_str();
  eval.add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
  eval.add_option("--workers", o.workers, "Data loader worker threads")
      ->check(kNonNegativeInt)
      ->capture_default_str();
}

void add_predict_options(CLI::App& predict, ignis_cli::PredictOptions& o) {
  predict
      .add_option(
          "run,--run",
          o.run,
          "Run directory of 'ignis train' (config.json, model.safetensors), or a model file "
          "whose directory holds the run's config.json; first argument, or --run as for eval")
      ->required();
  predict
      .add_option(
          "images",
          o.images,
          "PNG/JPEG files, and directories searched recursively for .png/.jpg/.jpeg files. "
          "Each is resized and cropped to the run's input as in training; any unreadable "
          "image stops the command before anything is printed")
      ->required();
  predict.add_option("--top-k", o.top_k, "Classes shown per image (at most the run's classes)")
      ->check(kPositiveInt)
      ->capture_default_str();
  predict.add_option("--format", o.format, "table, csv or json")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  predict.add_option("--device", o.device, "auto, cpu, cuda or cuda:N")->capture_default_str();
}

void add_bench_options(CLI::App& bench, ignis_cli::BenchOptions& o) {
  bench.add_option("--model", o.models, "Models, comma-separated: mlp, cnn, resnet18")
      ->delimiter(',')
      ->check(CLI::IsMember({"mlp", "cnn", "resnet18"}))
      ->capture_default_str();
  bench.add_option("--batch-sizes", o.batch_sizes, "Batch sizes, comma-separated")
      ->delimiter(',')
      ->check(kPositiveInt)
      ->capture_default_str();
  bench.add_option("--seconds", o.seconds, "Minimum timed seconds per measurement")
      ->check(kPositive)
      ->capture_default_str();
  bench.add_option("--row", o.row)->group("");  // internal: one row in a child process
}

}  // namespace

int ignis_cli::run_command_line(int argc, const char* const* argv, const Commands& commands) {
  CLI::App app{"ignis: train, evaluate and inspect models with the Ignis engine", "ignis"};
  app.require_subcommand(1);
  ignis_cli::TrainOptions train_opts;
  CLI::App* train = app.add_subcommand(
      "train", "Train a model, evaluate its best epoch on the test set, save it");
  add_train_options(*train, train_opts);
  ignis_cli::EvalOptions eval_opts;
  CLI::App* eval = app.add_subcommand(
      "eval", "Evaluate a run's (or a weights file's) model on the test, validation or train part");
  add_eval_options(*eval, eval_opts);
  ignis_cli::PredictOptions predict_opts;
  CLI::App* predict = app.add_subcommand(
      "predict", "Top-k classes with probabilities of image files under a trained run's model");
  add_predict_options(*predict, predict_opts);
  ignis_cli::BenchOptions bench_opts;
  CLI::App* bench = app.add_subcommand(
      "bench", "Training and inference throughput on the CPU and each GPU, with TFLOP/s");
  add_bench_options(*bench, bench_opts);
  CLI::App* devices = app.add_subcommand("devices", "Show the CPU and the CUDA devices");

  // An unknown first word would otherwise read "A subcommand is required", which hides the typo.
  auto known = [&](const std::string& word) {
    for (const CLI::App* c : app.get_subcommands({}))
      if (c->get_name() == word) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !known(argv[1]))
    return fail(fmt::format(
        "unknown command '{}'; use 'ignis train', 'eval', 'predict', 'bench' or 'devices'", argv[1]));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    std::string sub = "ignis --help";
    for (CLI::App* c : app.get_subcommands({}))
      if (c->parsed()) sub = fmt::format("ignis {} --help", c->get_name());
    return fail(fmt::format("{}; see '{}'", what, sub));
  }

  try {
    if (train->parsed()) {
      ignis_cli::apply_config_sources(*train, train_opts, add_train_options);
      if (train_opts.preset.empty() && train_opts.epochs_exact != double(train_opts.epochs))
        return fail(fmt::format(
            "--epochs: '{}' is not a whole number >= 1 (a fraction of an epoch only with "
            "--preset)",
            train_opts.epochs_exact));
      if (!train_opts.preset.empty()) {
        const std::string conflict = preset_conflict(*train, train_opts);
        if (!conflict.empty())
          return fail(fmt::format(
              "--preset {} fixes its own recipe, so {} cannot be used; drop it",
              train_opts.preset, conflict));
        // The preset's own defaults, where neither a flag nor a config file set the option.
        const ignis_cli::TrainOptions defaults;
        if (train->count("--batch-size") == 0 && train_opts.batch_size == defaults.batch_size)
          train_opts.batch_size = 1024;
        if (train->count("--amp") == 0 && train_opts.amp == defaults.amp) train_opts.amp = "auto";
      }
      if (train_opts.batch_size_auto && train_opts.accumulate > 1)
        return fail(
            "--batch-size auto finds the largest batch that fits in one pass, and --accumulate "
            "is for batches larger than that: give --batch-size N with --accumulate, or drop "
            "--accumulate");
      return commands.train(train_opts);
    }
    if (eval->parsed()) return commands.eval(eval_opts);
    if (predict->parsed()) return commands.predict(predict_opts);
    if (bench->parsed()) return commands.bench(bench_opts);
    if (devices->parsed()) return commands.devices();
  } catch (const ignis_cli::UsageError& e) {
    return fail(e.what());
  } catch (const ignis::Error& e) {
    return fail(e.what());
  } catch (const std::exception& e) {
    // Anything else (a malformed JSON file, a full disk) still gets one line, not an abort.
    return fail(e.what());
  }
  return 0;
}

int ignis_cli::train_command(TrainOptions options) {
  try {
    return run_reporting_out_of_memory(
        [&](TrainProgress& progress) { return run_train(options, &progress); });
  } catch (const std::exception& e) {
    end_job_after_error(e);  // one rank of several: ends the job here
    throw;
  }
}
