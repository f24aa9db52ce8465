// `ignis train --preset airbench94`: the CIFAR-10 speed recipe of Keller Jordan's airbench94,
// run under its own rules — train on the 50,000 training images, score the 10,000 test images,
// time with device events the whitening set-up, every training epoch and the final
// test-time-augmented evaluation, and leave out the warm-up and the per-epoch evaluations.
// bench/airbench_torch.py is the same recipe in PyTorch, for the side-by-side time.
//
// The recipe (data-side constants in Recipe below; the optimizer, schedule and lookahead in
// models::Airbench94Trainer): models::AirbenchNet with its first layer set to the whitening
// filters of 5000 training images; batch 1024; alternating flips and reflect-padded 2-pixel
// translations; at the end, logits averaged over mirrored and 1-pixel-translated views.
#include "airbench.h"

#include <fmt/format.h>
#include <ignis/ignis.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_flops.h"
#include "model_setup.h"
#include "run_dir.h"
#include "train_amp.h"
#include "train_data.h"

namespace ig = ignis;
using nlohmann::json;

namespace ignis_cli {
namespace {

// The recipe's data-side constants; the optimizer, schedule and lookahead are
// models::Airbench94Trainer's (Airbench94Options).
struct Recipe {
  double epochs = 9.9;
  int64_t whiten_images = 5000;
  int64_t translate = 2;
  int64_t eval_batch = 2000;
  std::vector<double> mean{0.4914, 0.4822, 0.4465}, std{0.2470, 0.2435, 0.2616};
};

/// Seconds of device work between start() and stop(), summed: CUDA events on a GPU (the
/// record's rule), the wall clock after a full stop on the CPU.
class SectionTimer {
 public:
  explicit SectionTimer(const ig::Device& device) : device_(device) {}
  void start() {
    if (device_.is_cuda()) {
      begin_.emplace(true);
      begin_->record(ig::cuda::current_stream(device_.index));
    } else {
      wall_ = std::chrono::steady_clock::now();
    }
  }
  void stop() {
    if (device_.is_cuda()) {
      ig::cuda::Event end(true);
      end.record(ig::cuda::current_stream(device_.index));
      end.synchronize();
      total_ += 1e-3 * begin_->elapsed_time(end);
    } else {
      total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    }
  }
  double seconds() const { return total_; }

 private:
  ig::Device device_;
  std::optional<ig::cuda::Event> begin_;
  std::chrono::steady_clock::time_point wall_;
  double total_ = 0;
};

ig::data::LabeledImages read_cifar10(const std::string& dir, bool train, int64_t limit) {
  ig::data::LabeledImages d;
  try {
    d = ig::data::cifar10(dir, train);
  } catch (const ig::IOError& e) {
    throw UsageError(fmt::format(
        "{}; --preset airbench94 needs the CIFAR-10 binary files (cifar-10-batches-bin) in "
        "--data-dir",
        e.what()));
  }
  return first_samples(std::move(d), limit);
}

/// uint8 images -> normalised float32, on the images' device.
ig::Tensor normalise(const ig::Tensor& images, const Recipe& r) {
  ig::data::ToFloat to_float;
  ig::data::Normalize norm(r.mean, r.std);
  const ig::data::TransformContext none;
  return norm(to_float(images, none), none);
}

/// Test accuracy of the model in eval mode, under autocast when training used it.
double test_accuracy(ig::models::AirbenchNet& model, const ig::data::LabeledImages& test,
                     const Recipe& r, const TrainAmp& amp, int tta_level) {
  ig::NoGradGuard no_grad;
  ig::amp::autocast cast(amp.dtype(), amp.autocast_enabled());
  model.eval();
  ig::Tensor correct = ig::zeros({}, ig::TensorOptions(ig::kInt64, test.images.device()));
  for (int64_t start = 0; start < test.images.size(0); start += r.eval_batch) {
    const int64_t n = std::min(r.eval_batch, test.images.size(0) - start);
    const ig::Tensor x = normalise(test.images.narrow(0, start, n), r);
    const ig::Tensor y = test.labels.narrow(0, start, n);
    correct.add_(ig::sum(ig::eq(ig::models::tta_logits(model, x, tta_level).argmax(1), y)));
  }
  model.train();
  return double(correct.item<int64_t>()) / double(test.images.size(0));
}

struct RunResult {
  double tta_accuracy = 0, seconds = 0;
  double train_seconds = 0;   ///< the timed training epochs alone
  int64_t samples_trained = 0;
  bool cuda_graph = false;  ///< the last epoch's steps replayed a CUDA graph
  std::vector<json> epochs;
};

/// One training run of the recipe from a fresh model; `max_steps` > 0 stops early (warm-up).
RunResult train_once(ig::models::AirbenchNet& model, const ig::data::LabeledImages& train,
                     const ig::data::LabeledImages& test, const Recipe& r, double epochs,
                     int64_t batch, uint64_t seed, const TrainAmp& amp,
                     const ig::Device& device, bool cuda_graph, int64_t max_steps,
                     bool report) {
  SectionTimer timer(device);
  timer.start();
  model.init_whitening(normalise(train.images.narrow(0, 0, std::min(r.whiten_images,
                                                                    train.images.size(0))),
                                 r));
  timer.stop();

  // In this order Compose runs all four as one pass over the uint8 batch (Note [Fused CPU
  // pipeline]; the GPU's geometry kernel takes the same fused parameters).
  using T = std::shared_ptr<ig::data::BatchTransform>;
  const std::vector<T> augment{
      std::make_shared<ig::data::ToFloat>(),
      std::make_shared<ig::data::Normalize>(r.mean, r.std),
      std::make_shared<ig::data::RandomCrop>(32, 32, r.translate, ig::data::PadMode::Reflect),
      std::make_shared<ig::data::RandomHorizontalFlip>(0.5, /*alternate=*/true)};
  ig::data::DataLoader loader(
      ig::data::make_dataset(train),
      {.batch_size = batch, .shuffle = true, .seed = seed, .drop_last = true,
       .device = device, .transform = ig::data::Compose(seed, augment)});
  const int64_t steps_per_epoch = loader.size();
  const int64_t total_steps = int64_t(std::ceil(double(steps_per_epoch) * epochs));
  const int64_t epochs_to_run = int64_t(std::ceil(epochs));

  ig::models::Airbench94Options options;
  if (amp.autocast_enabled()) options.autocast = amp.dtype();
  options.cuda_graph = cuda_graph;
  ig::models::Airbench94Trainer trainer(model, batch, total_steps, options);

  RunResult result;
  bool done = false;
  for (int64_t epoch = 0; epoch < epochs_to_run && !done; ++epoch) {
    trainer.begin_epoch(epoch);
    loader.set_epoch(epoch);
    ig::models::Airbench94Trainer::StepResult last;
    ig::Tensor labels;
    const double before = timer.seconds();
    timer.start();
    for (auto& batch_data : loader) {
      last = trainer.step(batch_data.x(), batch_data.y());
      labels = batch_data.y();
      result.samples_trained += labels.size(0);
      done = last.done || (max_steps > 0 && trainer.steps_taken() >= max_steps);
      if (done) break;
    }
    timer.stop();
    result.train_seconds += timer.seconds() - before;
    result.cuda_graph = trainer.step_in_cuda_graph();
    if (!report) continue;
    // Untimed: the last batch's loss and accuracy, and the test accuracy without TTA.
    const double batch_loss = last.loss.item<double>() / double(labels.size(0));
    const double batch_accuracy =
        ig::mean(ig::eq(last.logits.detach().argmax(1), labels).to(ig::kFloat32))
            .item<double>();
    const double accuracy = test_accuracy(model, test, r, amp, 0);
    fmt::print("{:>5} {:>10.4f} {:>9.4f} {:>13.4f} {:>9.3f}\n", epoch + 1, batch_loss,
               batch_accuracy, accuracy, timer.seconds());
    std::fflush(stdout);
    result.epochs.push_back({{"type", "epoch"},
                             {"epoch", epoch + 1},
                             {"train_loss", batch_loss},
                             {"train_accuracy", batch_accuracy},
                             {"test_accuracy", accuracy},
                             {"seconds", timer.seconds()}});
  }
  if (max_steps > 0) return result;
  timer.start();
  result.tta_accuracy = test_accuracy(model, test, r, amp, 2);
  timer.stop();
  result.seconds = timer.seconds();
  return result;
}

}  // namespace

int run_airbench(TrainOptions o) {
  const Recipe r;
  std::string why;
  const ig::Device device = resolve_device(o.device, why);
  if (o.amp == "auto") o.amp = device.is_cuda() ? "bf16" : "off";
  // cuDNN's bf16 convolutions are fastest in NHWC, as the record's PyTorch code runs them; on
  // the CPU oneDNN picks its own layout, so there the flag decides.
  if (device.is_cuda()) o.channels_last = true;
  // The step replays a CUDA graph unless --cuda-graphs off (models::Airbench94Options).
  const bool cuda_graph = device.is_cuda() && o.cuda_graphs == "auto";
  if (o.amp == "fp16")
    throw UsageError("--preset airbench94 runs without a loss scaler: use --amp bf16 or off");
  const double epochs = o.epochs_exact > 0 ? o.epochs_exact : r.epochs;
  const std::string dir = o.data_dir.empty() ? default_data_dir("cifar10") : o.data_dir;
  if (o.out.empty()) o.out = fmt::format("runs/airbench94-{}", timestamp());
  fmt::print("device  {} ({})\n", device.str(), why);

  const ig::data::LabeledImages train_host = read_cifar10(dir, true, o.limit);
  const ig::data::LabeledImages test_host = read_cifar10(dir, false, o.limit);
  if (train_host.images.size(0) < o.batch_size)
    throw UsageError(fmt::format(
        "--preset airbench94: {} training images are fewer than one batch of {}; lower "
        "--batch-size",
        train_host.images.size(0), o.batch_size));
  if (train_host.images.size(2) != 32 || train_host.images.size(3) != 32)
    throw UsageError("--preset airbench94 trains on 32x32 CIFAR images");
  // The whole data set lives on the device, as uint8 (the record's rule: no host work per step).
  ig::data::LabeledImages train = train_host, test = test_host;
  train.images = train_host.images.to(device);
  train.labels = train_host.labels.to(device);
  test.images = test_host.images.to(device);
  test.labels = test_host.labels.to(device);

  TrainAmp amp(o.amp);
  const ig::models::AirbenchConfig net_config{.num_classes = 10};
  auto make_net = [&] {
    auto net = std::make_unique<ig::models::AirbenchNet>(net_config);
    net->to(device);
    if (o.channels_last) net->to(ig::MemoryFormat::channels_last);
    return net;
  };
  const json config = {{"preset", "airbench94"},      {"model", "airbench"},
                       {"data", "cifar10"},           {"data_dir", dir},
                       {"split", "official"},         {"epochs", epochs},
                       {"batch_size", o.batch_size},  {"seed", o.seed},
                       {"device", device.str()},      {"amp", o.amp},
                       {"channels_last", o.channels_last}, {"limit", o.limit},
                       {"classes", train_host.classes},
                       {"mean", r.mean},
                       {"std", r.std},
                       {"train_samples", train.images.size(0)},
                       {"test_samples", test.images.size(0)},
                       {"started_at", timestamp()}};
  RunDir run(o.out, config, /*resume=*/false);
  fmt::print("recipe  airbench94: {} epochs of {} training images, batch {}, amp {}{}{}\n",
             epochs, train.images.size(0), o.batch_size, o.amp,
             o.channels_last ? ", channels-last" : "",
             cuda_graph ? ", step in a CUDA graph" : "");
  fmt::print("run     {}\n", o.out);

  // Warm-up (not timed): a throwaway model takes a few steps, so that cuDNN's algorithm
  // choices and the allocator's cache are in place before the clock starts.
  {
    ig::manual_seed(o.seed + 1000003);
    auto warm = make_net();
    train_once(*warm, train, test, r, epochs, o.batch_size, o.seed, amp, device, cuda_graph,
               device.is_cuda() ? 20 : 2, false);
  }

  ig::manual_seed(o.seed);
  auto model = make_net();
  fmt::print("{:>5} {:>10} {:>9} {:>13} {:>9}\n", "epoch", "train_loss", "train_acc",
             "test_acc", "seconds");
  const RunResult result =
      train_once(*model, train, test, r, epochs, o.batch_size, o.seed, amp, device, cuda_graph,
                 0, true);
  fmt::print("test accuracy with TTA {:.4f} in {:.3f} s (timed: whitening, training, final "
             "evaluation)\n",
             result.tta_accuracy, result.seconds);
  // Work done: 3 x the forward pass's multiply-adds x 2 per trained sample (bench_flops.h),
  // over the timed training epochs alone.
  const double train_flops =
      training_flops(forward_macs("airbench", 3, 32, 10)) * double(result.samples_trained);
  const double tflops = train_flops / std::max(result.train_seconds, 1e-9) / 1e12;
  fmt::print("training {:.3f} PFLOP in {:.3f} s: {:.2f} TFLOP/s\n", train_flops / 1e15,
             result.train_seconds, tflops);

  std::vector<json> records = result.epochs;
  records.push_back({{"type", "final"},
                     {"tta_test_accuracy", result.tta_accuracy},
                     {"time_s", result.seconds},
                     {"train_seconds", result.train_seconds},
                     {"samples_trained", result.samples_trained},
                     {"train_flops", train_flops},
                     {"train_tflop_per_s", tflops},
                     {"epochs", epochs},
                     {"device", device.str()},
                     {"cuda_graph", result.cuda_graph}});
  run.write_metrics(records);
  ig::save(*model, run.file("model.safetensors"),
           {{"model", "airbench"}, {"preset", "airbench94"}, {"data", "cifar10"}});
  fmt::print("saved   {}\n", run.file("model.safetensors"));
  return 0;
}

}  // namespace ignis_cli
