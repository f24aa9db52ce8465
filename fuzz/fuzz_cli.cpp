// The `ignis` command line (apps/ignis/main.cpp): the input is the arguments after the
// program's name, separated by NUL bytes (at most 64). The commands do nothing but look at
// their options the way the real ones first do (train: the --split fractions and the --data
// label), so every flag, value, subcommand and --config/--resume path goes through the
// program's own parsing. run_command_line must return (0, or 2 with the one-line error);
// an exception escaping it aborts the fuzzer.
#include <string>
#include <vector>

#include "command_line.h"
#include "train_data.h"

namespace {

int check_train(ignis_cli::TrainOptions o) {
  (void)ignis_cli::parse_split(o.split);  // throws UsageError, which the command line reports
  (void)ignis_cli::data_label(o.data);
  return 0;
}
int no_eval(const ignis_cli::EvalOptions&) { return 0; }
int no_predict(const ignis_cli::PredictOptions&) { return 0; }
int no_bench(const ignis_cli::BenchOptions&) { return 0; }
int no_devices() { return 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"ignis"};
  if (size > 0) args.emplace_back();
  for (size_t i = 0; i < size && args.size() <= 65; ++i) {
    if (data[i] == 0)
      args.emplace_back();
    else
      args.back().push_back(char(data[i]));
  }
  if (args.size() > 65) args.resize(65);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const ignis_cli::Commands commands{.train = check_train,
                                     .eval = no_eval,
                                     .predict = no_predict,
                                     .bench = no_bench,
                                     .devices = no_devices};
  (void)ignis_cli::run_command_line(int(argv.size()), argv.data(), commands);
  return 0;
}
