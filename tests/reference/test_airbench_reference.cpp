// AirbenchNet against its PyTorch twin (bench/airbench_torch.py): logits and test-time
// augmented logits of a saved model, and the whitening filters of the same images.
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

TEST(AirbenchReference, LogitsTtaAndWhiteningMatchPyTorch) {
#if !IGNIS_REFERENCE_HAVE_TORCH
  GTEST_SKIP() << "PyTorch (python3-torch) not found at configure time";
#else
  fs::path dir = fs::temp_directory_path() / ("ignis_airbench_ref_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

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

  const std::string cmd = std::string(IGNIS_PYTHON) + " " + IGNIS_AIRBENCH_SCRIPT + " --dir " +
                          dir.string() + " --bench " + IGNIS_BENCH_DIR;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "the PyTorch side found a mismatch: " << cmd;
  fs::remove_all(dir);
#endif
}

}  // namespace
}  // namespace ignis
