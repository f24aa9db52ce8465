// The `ignis` command line as a function, so that it can run without running a command:
// main() (ignis_main.cpp) passes the real commands; fuzz/fuzz_cli.cpp and fuzz_config.cpp pass
// commands that only look at the options, so every flag, value and config file goes through
// exactly the parsing and checks the program applies.
#pragma once

#include "options.h"

namespace ignis_cli {

/// What each subcommand runs once its options are parsed (and, for train, its --config or
/// --resume file applied).
/// `ignis train` as the program runs it: run_train, with an out-of-memory error turned into
/// the one-line report of out_of_memory_report.h.
int train_command(TrainOptions options);

struct Commands {
  int (*train)(TrainOptions options) = train_command;
  int (*eval)(const EvalOptions& options) = run_eval;
  int (*predict)(const PredictOptions& options) = run_predict;
  int (*bench)(const BenchOptions& options) = run_bench;
  int (*devices)() = run_devices;
};

/// Parses argv (argv[0] is the program) and runs the chosen command; returns the exit status:
/// 2 with one line "ignis: error: ..." on stderr for a bad flag, value, combination or file.
int run_command_line(int argc, const char* const* argv, const Commands& commands = {});

}  // namespace ignis_cli
