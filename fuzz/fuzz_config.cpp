// `ignis train --config FILE` and `--resume DIR` (apps/ignis/config_file.cpp). The first byte
// chooses how the rest is read: 0 as FILE.json, 1 as FILE.toml, 2 as DIR/config.json of a run
// being resumed (by its value mod 3). The command line runs as the program runs it, with a
// train command that does nothing, so the file's keys and values meet every check a flag
// meets. A bad file must end in the one-line error and exit status 2 (never an exception out
// of run_command_line, which would abort here).
#include <string>
#include <vector>

#include "command_line.h"
#include "fuzz_support.h"

namespace {

int no_train(ignis_cli::TrainOptions) { return 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kNames[3] = {"config.json", "config.toml", "run/config.json"};
  const int mode = data[0] % 3;
  const std::string path = ignis::fuzz::as_named_file(data + 1, size - 1, kNames[mode]);
  const std::string dir = path.substr(0, path.rfind('/'));
  std::vector<const char*> argv{"ignis", "train"};
  if (mode == 2) {
    argv.push_back("--resume");
    argv.push_back(dir.c_str());
  } else {
    argv.push_back("--config");
    argv.push_back(path.c_str());
  }
  ignis_cli::Commands commands;
  commands.train = no_train;
  (void)ignis_cli::run_command_line(int(argv.size()), argv.data(), commands);
  return 0;
}
