// The resolved options of `ignis train` and the pieces of the trainer that share them.
// main.cpp fills TrainOptions from the command line; resolve_defaults() turns the "pick for
// me" values (empty model, zero epochs, NaN lr) into the recipe for the chosen device, so
// config.json always records what actually ran.
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ignis_cli {

/// A mistake in what the user asked for: main() prints "ignis: error: <what>" and exits 2.
/// Messages say what is wrong and how to fix it, in one line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TrainOptions {
  std::string model;                   ///< "" = cnn on the CPU, resnet18 on a GPU
  std::string data = "fashion-mnist";  ///< a name, or imagefolder:PATH / csv:PATH
  std::string data_dir;                ///< "" = the data set's default location
  std::string split = "0.7,0.1,0.2";
  int64_t epochs = 0;  ///< 0 = the recipe's
  double epochs_exact = 0;  ///< --epochs as given: a fraction only with --preset (0 = not given)
  int64_t batch_size = 128;
  bool batch_size_auto = false;  ///< --batch-size auto: batch_size is chosen by run_train
  std::string optimizer = "sgd";
  double lr = std::numeric_limits<double>::quiet_NaN();  ///< NaN = the optimizer's recipe lr
  double momentum = 0.9;
  bool nesterov = true;
  double weight_decay = 5e-4;
  std::string schedule = "onecycle";
  double warmup = 0;  ///< epochs of linear warm-up (onecycle: the rising phase)
  double label_smoothing = 0;
  std::string augment = "none";
  std::string device = "auto";
  int workers = 0;
  uint64_t seed = 0;
  std::string out;          ///< "" = runs/<model>-<data>-<timestamp>
  int64_t limit = 0;        ///< 0 = all samples
  int64_t image_size = 32;  ///< --data imagefolder: side of the square images
  int64_t accumulate = 1;   ///< micro-batches per optimizer step (--batch-size is split N ways)
  int64_t early_stop = 0;   ///< 0 = off; else stop after N epochs without a better validation
  std::string on_nonfinite = "stop";  ///< "stop" or "skip" a step with a NaN/Inf loss or grad
  bool detect_anomaly = false;        ///< name the first parameter with a non-finite gradient
  std::string cuda_graphs = "auto";   ///< "auto": capture the step on a GPU when allowed; "off"
  bool sync_bn = false;               ///< under mpirun: batch norm over the global batch
  bool channels_last = false;         ///< the model's conv weights (and so activations) NHWC
  int64_t checkpoint_every = 0;       ///< 0 = only after each epoch; else also every N steps
  std::string config;                 ///< --config FILE (already applied when run_train starts)
  std::string resume;                 ///< --resume DIR: continue the run in DIR from its checkpoint
  std::string amp = "off";            ///< off, bf16 or fp16 (autocast; fp16 adds a GradScaler)
  bool profile_startup = false;       ///< print the `startup {...}` line after the first step
  std::string preset;  ///< "airbench94": the CIFAR-10 speed recipe (airbench.h) instead
};

/// `ignis eval`: a finished run (--run DIR) or a weights file with the model and data named.
struct EvalOptions {
  std::string run;      ///< run directory of `ignis train` ("" = use weights)
  std::string weights;  ///< safetensors file
  std::string model;    ///< with --weights ("" = the file's "model" metadata)
  std::string data;     ///< with --weights ("" = the file's "data" metadata)
  std::string data_dir;
  std::string part = "test";  ///< test, val or train
  std::string split = "0.7,0.1,0.2";
  uint64_t seed = 0;
  int64_t limit = 0;
  int64_t image_size = 32;   ///< with --weights and imagefolder:PATH
  int64_t batch_size = 128;  ///< evaluation uses twice this, as training does
  std::string device = "auto";
  int workers = 0;
};

/// `ignis predict`: the top-k classes of image files under a run's model.
struct PredictOptions {
  std::string run;                  ///< run directory, or a model file beside its config.json
  std::vector<std::string> images;  ///< image files and directories of them
  int64_t top_k = 5;                ///< at most the number of classes
  std::string format = "table";     ///< table, csv or json
  std::string device = "auto";
};

/// `ignis bench`.
struct BenchOptions {
  std::vector<std::string> models{"mlp", "cnn"};
  std::vector<int64_t> batch_sizes{32, 256};
  double seconds = 1.0;  ///< minimum timed duration of each measurement
  std::string row;       ///< internal: "device,model,batch" measured in this process
};

struct TrainProgress;
/// Runs `ignis train`; returns the exit status. `progress` (optional) is kept up to date with
/// the batch size, run directory and step, for the out-of-memory message.
int run_train(TrainOptions options, TrainProgress* progress = nullptr);
/// Runs `ignis eval`.
int run_eval(const EvalOptions& options);
/// Runs `ignis predict`.
int run_predict(const PredictOptions& options);
/// Runs `ignis bench`.
int run_bench(const BenchOptions& options);
/// Runs `ignis devices`.
int run_devices();

}  // namespace ignis_cli
