// `ignis train`: resolves the recipe, builds the model, optimizer, schedule and loaders,
// trains with periodic progress, keeps the best epoch by validation accuracy, evaluates it on
// the test set and writes the run directory. Data reading and splitting are in
// train_data.cpp, the device and model in model_setup.cpp, evaluation in evaluate.cpp, the
// metrics tables in report.cpp, the run directory in run_dir.cpp, the checkpoint (resume,
// SIGINT/SIGTERM) in checkpoint.cpp, --config in config_file.cpp. Under `mpirun -np N` the
// ranks share the work (data_parallel.h): sharded batches, DistributedDataParallel, metrics
// summed over the ranks, rank 0 alone printing and writing the run directory.
//
// Default recipe (no flags, CPU): SmallCNN on Fashion-MNIST, 8 epochs, batch 128, SGD with
// Nesterov momentum 0.9, weight decay 5e-4, one-cycle lr peaking at 0.05 — chosen to finish
// well within 5 minutes on two cores while passing 91% test accuracy. Measured on the 2-core
// development VM with no other load: 155 s wall (about 19 s per epoch), 92.27% test accuracy
// (3 epochs: 54 s, 90.49%). On a GPU: ResNet-18.
#include <fmt/format.h>
#include <ignis/ignis.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "airbench.h"
#include "batch_size_auto.h"
#include "checkpoint.h"
#include "data_parallel.h"
#include "evaluate.h"
#include "model_setup.h"
#include "options.h"
#include "out_of_memory_report.h"
#include "report.h"
#include "report_html.h"
#include "run_dir.h"
#include "startup_profile.h"
#include "train_amp.h"
#include "train_data.h"
#include "train_graph.h"

namespace ig = ignis;
namespace F = ignis::nn::functional;
using Clock = std::chrono::steady_clock;

namespace ignis_cli {
namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::unique_ptr<ig::optim::Optimizer> make_optimizer(
    const TrainOptions& o, std::vector<ig::Tensor> params) {
  namespace opt = ig::optim;
  if (o.optimizer == "sgd")
    return std::make_unique<opt::SGD>(
        std::move(params),
        opt::SGDOptions{
            .lr = o.lr,
            .momentum = o.momentum,
            .weight_decay = o.weight_decay,
            .nesterov = o.nesterov});
  if (o.optimizer == "adam")
    return std::make_unique<opt::Adam>(
        std::move(params), opt::AdamOptions{.lr = o.lr, .weight_decay = o.weight_decay});
  if (o.optimizer == "adamw")
    return std::make_unique<opt::AdamW>(
        std::move(params), opt::AdamWOptions{.lr = o.lr, .weight_decay = o.weight_decay});
  return std::make_unique<opt::RMSprop>(
      std::move(params),
      opt::RMSpropOptions{.lr = o.lr, .weight_decay = o.weight_decay, .momentum = o.momentum});
}

// The schedule, stepped once per batch (so warm-up may be a fraction of an epoch). Returns
// the schedulers in construction order; the last one is the one to step (SequentialLR holds
// references to the others, which must stay alive).
std::vector<std::unique_ptr<ig::optim::LRScheduler>> make_schedule(
    const TrainOptions& o,
    ig::optim::Optimizer& opt,
    int64_t total_steps,
    int64_t steps_per_epoch) {
  namespace optim = ig::optim;
  std::vector<std::unique_ptr<optim::LRScheduler>> s;
  const int64_t warm =
      std::min<int64_t>(int64_t(std::llround(o.warmup * double(steps_per_epoch))), total_steps - 1);
  if (o.schedule == "onecycle") {
    optim::OneCycleLROptions oc;
    if (warm > 0) oc.pct_start = double(warm) / double(total_steps);
    const bool has_momentum = o.optimizer == "adam" || o.optimizer == "adamw" || o.momentum > 0;
    oc.cycle_momentum = has_momentum;
    if (o.optimizer == "sgd" || o.optimizer == "rmsprop") {
      oc.max_momentum = o.momentum;  // cycle down from the requested momentum
      oc.base_momentum = std::max(0.0, o.momentum - 0.1);
    }
    // +1: the last batch's step() would otherwise run one past the end (a ValueError).
    s.push_back(std::make_unique<optim::OneCycleLR>(opt, o.lr, total_steps + 1, oc));
    return s;
  }
  if (warm > 0)
    s.push_back(std::make_unique<optim::LinearLR>(opt, 1.0 / double(warm + 1), 1.0, warm));
  const int64_t rest = std::max<int64_t>(total_steps - warm, 1);
  if (o.schedule == "cosine")
    s.push_back(std::make_unique<optim::CosineAnnealingLR>(opt, rest));
  else if (o.schedule == "step")  // x0.1 at 50% and 75% of the steps after warm-up
    s.push_back(std::make_unique<optim::MultiStepLR>(
        opt, std::vector<int64_t>{rest / 2, rest * 3 / 4}, 0.1));
  if (warm > 0 && s.size() == 2) {
    std::vector<std::reference_wrapper<optim::LRScheduler>> parts{*s[0], *s[1]};
    s.push_back(std::make_unique<optim::SequentialLR>(opt, parts, std::vector<int64_t>{warm}));
  }
  return s;
}

// Options the user left to the recipe, filled in for the chosen device.
void resolve_defaults(TrainOptions& o, const ig::Device& device, const Ranks& ranks) {
  if (o.model.empty())
    o.model = o.data.rfind("csv:", 0) == 0 ? "mlp" : device.is_cuda() ? "resnet18" : "cnn";
  if (o.epochs == 0) o.epochs = 8;
  if (std::isnan(o.lr)) o.lr = o.optimizer == "sgd" ? 0.05 : 1e-3;
  if (o.optimizer != "sgd" || o.momentum == 0)
    o.nesterov = false;  // Nesterov is SGD's, needs momentum
  if (o.out.empty()) o.out = fmt::format("runs/{}-{}-{}", o.model, data_label(o.data), timestamp());
  if (o.batch_size % ranks.size != 0)
    throw UsageError(fmt::format(
        "--batch-size {} cannot be split evenly over {} processes; --batch-size is the global "
        "batch, give a multiple of {}",
        o.batch_size,
        ranks.size,
        ranks.size));
  const int64_t per_rank = o.batch_size / ranks.size;
  if (per_rank % o.accumulate != 0)
    throw UsageError(fmt::format(
        "--accumulate {} does not divide {}; --batch-size is the samples per optimizer step, "
        "split into {} equal micro-batches",
        o.accumulate,
        ranks.distributed() ? fmt::format("the {} samples per process (--batch-size {} over {} "
                                          "processes)",
                                          per_rank,
                                          o.batch_size,
                                          ranks.size)
                            : fmt::format("--batch-size {}", o.batch_size),
        o.accumulate));
}

// One optimizer step's forward and backward passes, over --accumulate micro-batches.
struct StepResult {
  ig::Tensor loss_sum, correct;  ///< summed over the batch's samples, detached
  /// On the step's device: true when the loss and every gradient are finite (the gradients
  /// under an fp16 scaler are its own to check). Read by read_finiteness.
  ig::Tensor finite_flag;
  bool finite = true;  ///< the loss and every gradient are finite
  bool loss_finite = true;
  std::string bad_param;  ///< with --detect-anomaly: first non-finite gradient
};

// `ddp` (when distributed) is `model`'s wrapper: micro-batches before the last one skip its
// gradient reduction, the last one reduces the accumulated sum once.
StepResult forward_backward(
    ig::nn::Module& model,
    ig::nn::DistributedDataParallel* ddp,
    ig::data::Batch& batch,
    const TrainOptions& o,
    const TrainAmp& amp,
    int64_t micro) {
  const ig::Tensor& x = batch.x();
  const ig::Tensor& y = batch.y();
  const int64_t n = batch.size();
  StepResult r;
  for (int64_t lo = 0; lo < n; lo += micro) {
    const int64_t len = std::min(micro, n - lo);
    std::optional<ig::nn::DistributedDataParallel::NoSyncGuard> local_only;
    if (ddp && lo + len < n) local_only.emplace(*ddp);
    const ig::Tensor xs = len == n ? x : x.narrow(0, lo, len);
    const ig::Tensor ys = len == n ? y : y.narrow(0, lo, len);
    ig::Tensor logits, loss;
    {
      ig::amp::autocast mixed(amp.dtype(), amp.autocast_enabled());
      logits = model(xs);
      loss = F::cross_entropy(logits, ys, {.label_smoothing = o.label_smoothing});
    }
    // Each micro-batch's mean loss weighted by its share of the batch: the gradients add up
    // to those of the whole batch's mean loss, the step one big batch would take.
    amp.loss_for_backward(len == n ? loss : loss * (double(len) / double(n))).backward();
    ig::NoGradGuard no_grad;
    ig::Tensor l = loss.detach() * double(len);
    ig::Tensor c = (logits.argmax(1) == ys).sum();
    r.loss_sum = r.loss_sum.defined() ? r.loss_sum + l : l;
    r.correct = r.correct.defined() ? r.correct + c : c;
  }
  ig::NoGradGuard no_grad;
  // One flag on the device: a single read per step, not one per parameter (each read waits
  // for a GPU). Under fp16, overflowing gradients are the scaler's to find.
  r.finite_flag = loss_and_gradients_finite(r.loss_sum, model, !amp.scaler_checks_gradients());
  return r;
}

// Reads a step's finiteness into r.finite / r.loss_finite (one read that waits for the
// device; a second only when something is not finite) and, with --detect-anomaly, names the
// first parameter (in registration order) whose gradient is not finite.
void read_finiteness(StepResult& r, ig::nn::Module& model, const TrainOptions& o) {
  r.finite = r.finite_flag.item<bool>();
  r.loss_finite = r.finite || std::isfinite(r.loss_sum.item<double>());
  if (r.finite || !o.detect_anomaly) return;
  ig::NoGradGuard no_grad;
  for (const auto& [name, p] : model.named_parameters()) {
    const ig::Tensor& g = p.grad();
    if (g.defined() && !ig::all_finite({g}).item<bool>()) {
      r.bad_param = name;
      return;
    }
  }
}

UsageError nonfinite_error(const StepResult& r, int64_t epoch, int64_t step) {
  return UsageError(fmt::format(
      "non-finite {} at epoch {} step {}{}; lower --lr, or pass --on-nonfinite skip to skip such "
      "steps",
      r.loss_finite ? "gradient" : "loss",
      epoch,
      step,
      r.bad_param.empty() ? "" : fmt::format(" (first non-finite gradient: {})", r.bad_param)));
}

// The running sums of the epoch in progress over every rank: loss, correct, samples seen.
struct EpochSums {
  double loss = 0, correct = 0;
  int64_t seen = 0;
};
EpochSums epoch_sums(const TrainState& st, const Ranks& ranks) {
  std::vector<double> v{
      st.loss_sum.defined() ? st.loss_sum.item<double>() : 0.0,
      st.correct_sum.defined() ? st.correct_sum.item<double>() : 0.0,
      double(st.seen)};
  sum_across_ranks(ranks, v);
  return {v[0], v[1], int64_t(std::llround(v[2]))};
}

nlohmann::json config_json(
    const TrainOptions& o,
    const ig::Device& device,
    const TrainData& d,
    int64_t params,
    const Ranks& ranks) {
  nlohmann::json config = {
      {"ranks", ranks.size},
      {"model", o.model},
      {"data", o.data},
      {"data_dir", d.data_dir},
      {"split", o.split},
      {"epochs", o.epochs},
      {"batch_size", o.batch_size},
      {"optimizer", o.optimizer},
      {"lr", o.lr},
      {"momentum", o.momentum},
      {"nesterov", o.nesterov},
      {"weight_decay", o.weight_decay},
      {"schedule", o.schedule},
      {"warmup", o.warmup},
      {"label_smoothing", o.label_smoothing},
      {"augment", o.augment},
      {"device", device.str()},
      {"workers", o.workers},
      {"seed", o.seed},
      {"out", o.out},
      {"limit", o.limit},
      {"image_size", o.image_size},
      {"accumulate", o.accumulate},
      {"early_stop", o.early_stop},
      {"on_nonfinite", o.on_nonfinite},
      {"detect_anomaly", o.detect_anomaly},
      {"sync_bn", o.sync_bn},
      {"checkpoint_every", o.checkpoint_every},
      {"amp", o.amp},
      {"classes", d.classes},
      {"mean", d.mean},
      {"std", d.std},
      {"train_size", d.train->size()},
      {"val_size", d.val->size()},
      {"test_size", d.test->size()},
      {"parameters", params},
      {"ignis_version", ig::version()},
      {"started_at", timestamp()}};
  // Written only when on, so that runs from before the option resume with the same config.
  if (o.channels_last) config["channels_last"] = true;
  return config;
}

}  // namespace

int run_train(TrainOptions o, TrainProgress* progress) {
  if (!o.preset.empty()) return run_airbench(std::move(o));
  const auto run_start = Clock::now();
  StartupProfile startup;
  startup.mark("launch");  // libraries loaded, static initialisers run, command line parsed
  const bool resuming = !o.resume.empty();
  std::string why;
  ig::Device device = resolve_device(o.device, why);
  const Ranks ranks = join_job(device);
  resolve_defaults(o, device, ranks);
  int64_t rank_batch = o.batch_size / ranks.size;  // after --batch-size auto: its choice
  startup.mark("device");
  TrainData d = load_train_data(o);
  startup.mark("data");
  const int64_t num_classes = int64_t(d.classes.size());
  if (o.early_stop > 0 && d.val->size() == 0)
    throw UsageError(
        "--early-stop needs a validation part to watch; give --split a validation fraction "
        "(e.g. 0.7,0.1,0.2)");

  fmt::print("device  {} ({})\n", device.str(), why);
  if (ranks.distributed())
    fmt::print(
        "ranks   {} processes (mpirun), data-parallel: batch {} = {} x {} per process\n",
        ranks.size,
        o.batch_size,
        ranks.size,
        rank_batch);
  fmt::print(
      "data    {}: {} classes, {}x{}x{} images; train {}, validation {}, test {}\n",
      o.data,
      num_classes,
      d.channels,
      d.height,
      d.width,
      d.train->size(),
      d.val->size(),
      d.test->size());
  fmt::print("        {}\n", d.split_note);

  if (o.batch_size_auto) {  // before the seed: its trial models draw random weights
    // What fits one process's device; under mpirun every rank takes the smallest choice, and
    // the global batch is that times the ranks.
    std::vector<int64_t> chosen(size_t(ranks.size), 0);
    chosen[size_t(ranks.rank)] =
        choose_batch_size(o, d, device, [&](std::vector<ig::Tensor> params) {
          return make_optimizer(o, std::move(params));
        });
    if (ranks.distributed()) sum_across_ranks(ranks, chosen);
    rank_batch = *std::min_element(chosen.begin(), chosen.end());
    o.batch_size = rank_batch * ranks.size;
  }
  if (progress)
    progress->batch_size = o.batch_size, progress->accumulate = o.accumulate, progress->amp = o.amp;
  ig::manual_seed(o.seed);  // initial weights follow the seed
  std::unique_ptr<ig::nn::Module> model = make_model(o.model, d);
  model->to(device);
  if (o.channels_last) model->to(ig::MemoryFormat::channels_last);
  const int64_t params = model->num_parameters();
  fmt::print("model   {} ({} parameters)\n", o.model, params);

  // Batches travel to the device as uint8 (4x less to copy), then become normalised floats.
  using T = std::shared_ptr<ig::data::BatchTransform>;
  const std::vector<T> eval_tf = eval_transforms(d);
  std::vector<T> train_tf{eval_tf.front()};
  if (o.augment == "standard") {
    train_tf.push_back(std::make_shared<ig::data::RandomCrop>(d.height, d.width, 4));
    if (d.channels == 3) train_tf.push_back(std::make_shared<ig::data::RandomHorizontalFlip>());
  }
  train_tf.push_back(eval_tf.back());
  // Several processes: each takes its share of every epoch's shuffled order (see
  // data_parallel.h), padded so all ranks take the same number of steps.
  std::shared_ptr<const ig::data::Sampler> train_share;
  if (ranks.distributed())
    train_share = std::make_shared<ig::data::DistributedSampler>(
        d.train->size(),
        ig::data::DistributedSamplerOptions{
            .num_replicas = ranks.size, .rank = ranks.rank, .shuffle = true, .seed = o.seed});
  ig::data::DataLoader train_loader(
      d.train,
      {.batch_size = rank_batch,
       .shuffle = true,
       .seed = o.seed,
       .sampler = train_share,
       .num_workers = o.workers,
       .device = device,
       .transform = ig::data::Compose(o.seed, train_tf)});
  // Evaluation holds no activations for backward, so twice the batch fits, except after
  // --batch-size auto: its batch can sit near a library's size limit (cuDNN's 2^31-element
  // tensors), which a doubled batch would cross.
  const int64_t eval_batch = o.batch_size_auto ? rank_batch : 2 * rank_batch;
  auto val_loader = make_eval_loader(d.val, d, eval_batch, o.workers, device, o.seed, ranks);
  auto test_loader = make_eval_loader(d.test, d, eval_batch, o.workers, device, o.seed, ranks);

  auto optimizer = make_optimizer(o, model->parameters());
  const int64_t steps_per_epoch = train_loader.size();
  auto schedule = make_schedule(o, *optimizer, o.epochs * steps_per_epoch, steps_per_epoch);
  fmt::print(
      "recipe  {} epochs, batch {}{}, {} lr {} ({}{}), weight decay {}{}{}\n",
      o.epochs,
      o.batch_size,
      o.accumulate > 1 ? fmt::format(" ({} x {})", o.accumulate, o.batch_size / o.accumulate) : "",
      o.optimizer,
      o.lr,
      o.schedule,
      o.warmup > 0 ? fmt::format(", warm-up {} epochs", o.warmup) : "",
      o.weight_decay,
      o.optimizer == "sgd" || o.optimizer == "rmsprop" ? fmt::format(", momentum {}", o.momentum)
                                                       : "",
      o.nesterov ? " nesterov" : "");

  TrainAmp amp(o.amp);
  fmt::print("amp     {}\n", amp.describe());

  const nlohmann::json config = config_json(o, device, d, params, ranks);
  // Rank 0 alone owns the run directory; the others learn whether it could be used.
  std::optional<RunDir> run;
  std::string run_error;
  if (ranks.leader()) {
    try {
      run.emplace(o.out, config, resuming);
    } catch (const UsageError& e) {
      if (!ranks.distributed()) throw;
      run_error = e.what();
    }
  }
  if (!all_ranks_agree(ranks, run_error.empty()))
    throw UsageError(
        ranks.leader() ? run_error
                       : fmt::format("rank {}: rank 0 refused --out {} (its message says why)",
                                     ranks.rank,
                                     o.out));
  const std::string ckpt = run_file(o.out, kCheckpointFile);
  fmt::print("run     {}\n", o.out);
  if (progress) progress->run_dir = o.out, progress->steps_per_epoch = steps_per_epoch;

  TrainState st;
  auto progress_text = [&] {
    return st.step ? fmt::format("at epoch {} step {}/{}", st.epoch + 1, st.step, steps_per_epoch)
                   : fmt::format("after epoch {}", st.epoch);
  };
  if (resuming) {
    Checkpoint c = read_checkpoint(ckpt, o.out);
    const std::string diff = config_difference(c.config, config);
    if (!diff.empty())
      throw UsageError(fmt::format(
          "--resume {}: checkpoint.safetensors belongs to another run ({}); start again with "
          "another --out",
          o.out,
          diff));
    try {
      model->load_state_dict(c.model);
      // The schedule is a closed form of its step: stepping it there restores lr and momentum.
      while (!schedule.empty() && schedule.back()->last_epoch() < c.state.schedule_step)
        schedule.back()->step();
      optimizer->load_state_dict(c.optimizer);
      if (amp.scaler_checks_gradients()) amp.scaler().load_state_dict(c.state.grad_scaler);
    } catch (const ig::Error& e) {
      throw UsageError(fmt::format(
          "--resume {}: checkpoint.safetensors does not fit this model and optimizer ({})",
          o.out,
          e.what()));
    }
    ig::default_generator().manual_seed(c.rng_seed);
    ig::default_generator().set_offset(c.rng_offset);
    st = std::move(c.state);
    // The checkpoint holds the sums of the epoch in progress over all ranks (of however many
    // there were): rank 0 carries them on, the others start from zero.
    if (!ranks.leader()) {
      st.loss_sum = st.correct_sum = ig::Tensor();
      st.seen = 0;
    }
    if (run) run->write_metrics(st.history);  // drops an epoch logged after the checkpoint
    fmt::print("resume  {}\n", progress_text());
  }
  // The model is wrapped after any resume has loaded its weights (the wrapper then copies
  // rank 0's to every rank); `trained` is what the training steps call.
  std::unique_ptr<ig::nn::DistributedDataParallel> ddp;
  if (ranks.distributed()) {
    if (o.sync_bn) ig::nn::convert_sync_batchnorm(*model);
    ddp = std::make_unique<ig::nn::DistributedDataParallel>(*model);
  }
  ig::nn::Module& trained = ddp ? static_cast<ig::nn::Module&>(*ddp) : *model;
  // The step as one CUDA graph where the run allows it (train_graph.h).
  std::unique_ptr<GraphedStep> graphed;
  if (GraphedStep::eligible(o, device, ranks.distributed(), amp))
    graphed = std::make_unique<GraphedStep>(trained, *optimizer, o, amp);
  // A collective when distributed: every rank calls it at the same step.
  // Note [Late finiteness checks]
  // With --on-nonfinite stop (and no --detect-anomaly, scaler or other ranks, which need the
  // verdict before the optimizer step), a step's finiteness is read only after the next step
  // has been queued: reading it at once would make the host wait for the device every step,
  // leaving the GPU idle while the next step's kernels are queued. A non-finite step is then
  // applied before the run stops one step later, with the message naming that step; nothing
  // is saved in between (checkpoints, the epoch's sums, its evaluation and best weights
  // settle the pending check first).
  const bool late_checks = o.on_nonfinite == "stop" && !o.detect_anomaly && !ranks.distributed() &&
                           !amp.scaler_checks_gradients();
  struct Unchecked {
    StepResult r;
    int64_t epoch = 0, step = 0;
  };
  std::optional<Unchecked> unchecked;
  auto settle_checks = [&] {
    if (!unchecked) return;
    Unchecked u = std::move(*unchecked);
    unchecked.reset();
    read_finiteness(u.r, trained, o);
    if (!u.r.finite) throw nonfinite_error(u.r, u.epoch, u.step);
  };
  auto checkpoint = [&] {
    settle_checks();
    if (!schedule.empty()) st.schedule_step = schedule.back()->last_epoch();
    st.grad_scaler = amp.scaler().state_dict();
    if (!ranks.distributed()) return save_checkpoint(ckpt, st, *model, *optimizer, config);
    // The global state, so that any number of ranks can resume it.
    TrainState global = st;
    if (st.step > 0) {
      const EpochSums g = epoch_sums(st, ranks);
      global.loss_sum = ig::scalar_tensor(g.loss, {ig::kFloat32, device});
      global.correct_sum = ig::scalar_tensor(int64_t(std::llround(g.correct)), {ig::kInt64, device});
      global.seen = g.seen;
    }
    if (ranks.leader()) save_checkpoint(ckpt, global, *model, *optimizer, config);
  };
  auto early_stopped = [&] {
    return o.early_stop > 0 && st.epoch > 0 && st.epoch - st.best_epoch >= o.early_stop;
  };
  // SIGINT/SIGTERM: the current step finishes, a checkpoint is written, then exit 128 + signal.
  // Under mpirun a signal to any rank stops all of them at the same step.
  auto interrupted = [&] {
    checkpoint();
    std::fflush(stdout);
    const int sig = stop_signal() ? stop_signal() : SIGTERM;
    if (!ranks.leader()) return 128 + sig;
    fmt::print(
        stderr,
        "ignis: interrupted ({}) {}; checkpoint saved, continue with: ignis train --resume {}\n",
        sig == SIGINT ? "SIGINT" : "SIGTERM",
        progress_text(),
        o.out);
    return 128 + sig;
  };
  install_stop_handlers();
  startup.mark("model");  // model, loaders, optimizer and run directory ready

  // Under mpirun the log is written at fixed steps (every rank must join its sums).
  const bool tty = !ranks.distributed() && isatty(STDOUT_FILENO) != 0;
  const int64_t log_every = std::max<int64_t>(1, (steps_per_epoch + 4) / 5);
  model->train();
  for (int64_t epoch = st.epoch + 1; epoch <= o.epochs && !early_stopped(); ++epoch) {
    const auto epoch_start = Clock::now();
    auto window_start = epoch_start;
    int64_t window_samples = 0, step = 0;
    const int64_t done = st.step;       // steps this epoch already took before a resume
    train_loader.set_epoch(epoch - 1);  // the shuffle and augmentation of this epoch
    for (auto& batch : train_loader) {
      if (step < done) {  // replayed only to reach the resume point
        ++step;
        continue;
      }
      if (progress) progress->epoch = epoch, progress->step = step + 1;
      StepResult r;
      bool graph_step = false;
      try {
        graph_step = graphed &&
                     graphed->run(batch.x(), batch.y(), r.loss_sum, r.correct, r.finite_flag);
        if (!graph_step) {
          optimizer->zero_grad();
          r = forward_backward(trained, ddp.get(), batch, o, amp, rank_batch / o.accumulate);
        }
      } catch (...) {
        // A pending non-finite verdict of the step before is the error to report (a NaN loss
        // often makes the next step fail); a failure to read it leaves this step's error.
        try {
          settle_checks();
        } catch (const UsageError&) {
          throw;
        } catch (...) {
        }
        throw;
      }
      ++step;
      if (!late_checks) read_finiteness(r, trained, o);
      bool stop_now = stop_signal() != 0;
      if (ranks.distributed()) {  // every rank takes or skips the step, or stops, together
        std::vector<int64_t> flags{r.finite ? 0 : 1, r.loss_finite ? 0 : 1, stop_now ? 1 : 0};
        sum_across_ranks(ranks, flags);
        r.finite = flags[0] == 0;
        r.loss_finite = flags[1] == 0;
        stop_now = flags[2] > 0;
      }
      if (!r.finite && o.on_nonfinite == "stop") throw nonfinite_error(r, epoch, step);
      // Under --amp fp16 the scaler may still skip the step (overflowing gradients).
      // A captured step has already stepped (it runs only with --on-nonfinite stop).
      if (r.finite && (graph_step || amp.step(*optimizer))) {
        st.loss_sum = st.loss_sum.defined() ? st.loss_sum + r.loss_sum : r.loss_sum;
        st.correct_sum = st.correct_sum.defined() ? st.correct_sum + r.correct : r.correct;
        st.seen += batch.size();
      } else {
        ++st.skipped;  // the schedule still advances: lrs stay tied to the batch count
      }
      if (late_checks) {  // this step is queued: now wait for the previous one's verdict
        settle_checks();
        unchecked = Unchecked{std::move(r), epoch, step};
      }
      if (!schedule.empty()) schedule.back()->step();
      st.step = step;
      if (o.profile_startup && !startup.reported() && ranks.leader()) {
        if (device.is_cuda()) ig::cuda::synchronize(device.index);  // finished, not just queued
        startup.mark("first_step");
        fmt::print("{}\n", startup.line());
        std::fflush(stdout);
      }
      window_samples += batch.size() * ranks.size;
      if (step % log_every == 0 || step == steps_per_epoch || tty) {
        const double dt = seconds_since(window_start);
        const bool read_sums = !tty || dt > 0.5 || step == steps_per_epoch;
        if (read_sums) settle_checks();  // the sums hold the unchecked step's loss
        const EpochSums sums = read_sums ? epoch_sums(st, ranks) : EpochSums{};
        if (sums.seen > 0) {
          const double rate = double(window_samples) / std::max(dt, 1e-9);
          std::string line = fmt::format(
              "epoch {}/{}  step {}/{}  loss {:.4f}  acc {:.2f}%  {:.0f} samples/s",
              epoch,
              o.epochs,
              step,
              steps_per_epoch,
              sums.loss / double(sums.seen),
              100.0 * sums.correct / double(sums.seen),
              rate);
          // The rest of this epoch at the current rate, and what the tensors hold on a GPU.
          if (step < steps_per_epoch)
            line += "  ETA " +
                    duration_text(double(steps_per_epoch - step) * double(o.batch_size) / rate);
          if (device.is_cuda())
            line += fmt::format(
                "  gpu {:.2f} GiB",
                double(ig::cuda::memory_stats(device.index).allocated) / double(1 << 30));
          if (tty)
            fmt::print("\r{:<90}", line);
          else
            fmt::print("{}\n", line);
          std::fflush(stdout);
          window_start = Clock::now();
          window_samples = 0;
        }
      }
      if (step < steps_per_epoch) {
        if (stop_now) return interrupted();
        const int64_t global = (epoch - 1) * steps_per_epoch + step;
        if (o.checkpoint_every > 0 && global % o.checkpoint_every == 0) checkpoint();
      }
    }
    settle_checks();  // before the epoch's sums, the evaluation and the best weights
    if (tty) fmt::print("\n");
    const EpochSums sums = epoch_sums(st, ranks);
    const double seen = double(std::max<int64_t>(sums.seen, 1));
    const double train_loss = sums.seen ? sums.loss / seen : NAN;
    const double train_acc = sums.seen ? sums.correct / seen : NAN;
    const double train_time = seconds_since(epoch_start);
    EvalResult val = evaluate(*model, *val_loader, num_classes, ranks);
    const double epoch_time = seconds_since(epoch_start);
    const double lr = optimizer->param_groups()[0].get("lr");
    // Best by validation accuracy; without a validation part, the last epoch.
    const bool is_best = val.n == 0 || val.accuracy > st.best_accuracy;
    if (is_best) {
      st.best_accuracy = val.accuracy;
      st.best_epoch = epoch;
      st.best = ig::nn::StateDict();
      for (const auto& [key, t] : model->state_dict()) st.best.insert(key, t.clone());
    }
    const std::string val_text =
        val.n ? fmt::format("val loss {:.4f} acc {:.2f}%", val.loss, 100 * val.accuracy)
              : std::string("no validation set");
    fmt::print(
        "epoch {}/{} done  train loss {:.4f} acc {:.2f}%  {}  lr {:.3g}  {:.1f}s{}{}\n",
        epoch,
        o.epochs,
        train_loss,
        100 * train_acc,
        val_text,
        lr,
        epoch_time,
        st.skipped ? fmt::format("  ({} non-finite steps skipped)", st.skipped) : "",
        is_best ? "  (best)" : "");
    auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
    st.history.push_back(
        {{"type", "epoch"},
         {"epoch", epoch},
         {"train_loss", number(train_loss)},
         {"train_accuracy", number(train_acc)},
         {"val_loss", val.n ? nlohmann::json(val.loss) : nlohmann::json()},
         {"val_accuracy", val.n ? nlohmann::json(val.accuracy) : nlohmann::json()},
         {"lr", lr},
         {"skipped_steps", st.skipped},
         {"epoch_time_s", epoch_time},
         {"train_samples_per_s", double(sums.seen) / std::max(train_time, 1e-9)}});
    if (run) run->write_metrics(st.history);
    st.epoch = epoch;
    st.step = st.seen = st.skipped = 0;
    st.loss_sum = st.correct_sum = ig::Tensor();
    checkpoint();
    if (!all_ranks_agree(ranks, stop_signal() == 0)) return interrupted();
    if (early_stopped())
      fmt::print(
          "early stop: no better validation accuracy for {} epochs (best epoch {})\n",
          o.early_stop,
          st.best_epoch);
  }

  model->load_state_dict(st.best);
  EvalResult test = evaluate(*model, *test_loader, num_classes, ranks);
  fmt::print(
      "\ntest set ({} samples, best epoch {}): {}\n\n{}",
      test.n,
      st.best_epoch,
      format_summary(test),
      format_report(test.metrics, d.classes));
  nlohmann::json final_rec = to_json(test.metrics);
  final_rec.update(
      {{"type", "test"},
       {"best_epoch", st.best_epoch},
       {"epochs_run", st.epoch},
       {"test_loss", test.loss},
       {"test_accuracy", test.accuracy},
       {"test_samples", test.n},
       {"wall_time_s", seconds_since(run_start)}});
  if (num_classes > 5) final_rec["test_top5_accuracy"] = test.top5;
  std::vector<nlohmann::json> records = st.history;
  records.push_back(final_rec);
  if (run) {
    run->write_metrics(records);
    ig::save(*model, run->file("model.safetensors"), {{"model", o.model}, {"data", o.data}});
    fmt::print("\nsaved   {}\n", run->file("model.safetensors"));
    fmt::print("report  {}\n", write_html_report(run->path()));
  }
  // The others wait for rank 0's files, so the job ends once the run directory is complete.
  all_ranks_agree(ranks, true);
  leave_job(ranks);
  fmt::print("done in {:.1f}s\n", seconds_since(run_start));
  return 0;
}

}  // namespace ignis_cli
