// --config FILE and --resume DIR: `ignis train` options read from a JSON or TOML file (by
// extension) whose keys are the long options ("batch-size" or "batch_size"). The command line
// wins over the file. The run directory's config.json is such a file, so `--config
// run/config.json` repeats a run and `--resume run` reads its options from there; the keys
// config.json records but that are not options (classes, mean, sizes, ...) are skipped.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "options.h"

namespace ignis_cli {

/// Declares the options of `ignis train` on an app, bound to `o` (main.cpp's).
using AddTrainOptions = void (*)(CLI::App& app, TrainOptions& o);

/// Applies o.config, then o.resume's config.json (with o.out set to that directory), to the
/// options `train` (already parsed into `o`) did not get on the command line. Every value goes
/// through the option's own checks. Throws UsageError naming the file and the key for an
/// unreadable file, an unknown key, a value of the wrong type or one the option refuses.
void apply_config_sources(const CLI::App& train, TrainOptions& o, AddTrainOptions add);

}  // namespace ignis_cli
