// AirbenchNet against its PyTorch twin (bench/airbench_torch.py): logits and test-time
// augmented logits of a saved model, the whitening filters of the same images, and seven
// steps of the training recipe.
// airbench_reference.py does PyTorch's half.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "ignis/io.h"
#include "ignis/models.h"
#include "support/test_support.h"

namespace ignis {
namespace {

namespace fs = std::filesystem;

#if IGNIS_REFERENCE_HAVE_TORCH
/// An empty folder of the system's temporary directory, named for this process.
fs::path fresh_dir(const std::string& stem) {
  const fs::path dir = fs::temp_directory_path() / (stem + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// Runs airbench_reference.py's `mode` (--dir or --steps) on `dir`; expects it to find no
/// mismatch.
void expect_pytorch_agrees(const std::string& mode, const fs::path& dir) {
  const std::string cmd = std::string(IGNIS_PYTHON) + " " + IGNIS_AIRBENCH_SCRIPT + " " + mode +
                          " " + dir.string() + " --bench " + IGNIS_BENCH_DIR;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "the PyTorch side found a mismatch: " << cmd;
}
#endif

TEST(AirbenchReference, LogitsTtaAndWhiteningMatchPyTorch) {
#if !IGNIS_REFERENCE_HAVE_TORCH
  GTEST_SKIP() << "PyTorch (python3-torch) not found at configure time";
#else
  const fs::path dir = fresh_dir("ignis_airbench_ref_");

  manual_seed(7);
  models::AirbenchNet net;
  // Channels sharing a common part, so the patch covariance has distinct eigenvalues.
  const Tensor base = randn({24, 1, 32, 32});
  const Tensor images = base.expand({24, 3, 32, 32}) + randn({24, 3, 32, 32}) * 0.5;
  net.init_whitening(images);
  const Tensor whiten_weight = net.whiten.weight.clone();
  {  // Train-mode passes move the running statistics away from (0, 1).
    NoGradGuard no_grad;
    net.train();
    net(randn({8, 3, 32, 32}));
    net(randn({8, 3, 32, 32}) * 2 + 0.5);
  }
  net.eval();
  const Tensor x = randn({4, 3, 32, 32});
  NoGradGuard no_grad;
  const Tensor logits = net(x);
  const Tensor tta = models::tta_logits(net, x, 2);
  save(net, (dir / "ignis_airbench.safetensors").string());
  save(nn::StateDict{{"input", x}, {"logits", logits}, {"tta_logits", tta},
                     {"whiten_images", images.contiguous()}, {"whiten_weight", whiten_weight}},
       (dir / "ignis_io.safetensors").string());

  expect_pytorch_agrees("--dir", dir);
  fs::remove_all(dir);
#endif
}

// Seven recipe steps (models::Airbench94Trainer) from the same weights on the same batches in
// both engines: the parameter groups, the decoupled weight decay, Nesterov momentum, the lr
// schedule (warm-up over the first step, then down), the summed label-smoothed loss, batch
// norm's momentum and the lookahead (at step 5, and onto the average after step 7).
TEST(AirbenchReference, RecipeStepsMatchPyTorch) {
#if !IGNIS_REFERENCE_HAVE_TORCH
  GTEST_SKIP() << "PyTorch (python3-torch) not found at configure time";
#else
  const fs::path dir = fresh_dir("ignis_airbench_steps_");
  manual_seed(11);
  models::AirbenchNet net;
  const Tensor base = randn({16, 1, 32, 32});
  net.init_whitening(base.expand({16, 3, 32, 32}) + randn({16, 3, 32, 32}) * 0.5);
  save(net, (dir / "ignis_initial.safetensors").string());
  // The weight decay is given per sample; stated for 51,200-sample batches (while the batches
  // hold 16) it shrinks the weights by 10% a step, so a decay the engines disagree on shows.
  const int64_t steps = 7, batch = 16, decay_batch = 51200;
  nn::StateDict io;
  io.insert("decay_batch", tensor(std::vector<int64_t>{decay_batch}));
  models::Airbench94Trainer trainer(net, decay_batch, steps);
  trainer.begin_epoch(0);
  std::vector<double> losses;
  for (int64_t i = 0; i < steps; ++i) {
    const Tensor x = randn({batch, 3, 32, 32});
    const Tensor y = randint(0, 10, {batch});
    io.insert("x" + std::to_string(i), x);
    io.insert("y" + std::to_string(i), y);
    const auto r = trainer.step(x, y);
    losses.push_back(r.loss.item<double>());
    EXPECT_EQ(r.done, i == steps - 1);
  }
  io.insert("losses", tensor(losses).to(kFloat32));  // the twin reads F32 and I64
  save(io, (dir / "ignis_steps_io.safetensors").string());
  save(net, (dir / "ignis_final.safetensors").string());

  expect_pytorch_agrees("--steps", dir);
  fs::remove_all(dir);
#endif
}

}  // namespace
}  // namespace ignis
