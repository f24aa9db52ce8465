// safetensors against PyTorch: a ResNet-18 (ImageNet stem) saved by Ignis loads into
// torchvision's resnet18 and gives Ignis's logits, and one saved from PyTorch loads into
// Ignis's and gives PyTorch's. safetensors_reference.py does PyTorch's half with its own
// minimal reader and writer; this test runs it between its two halves.
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

TEST(SafetensorsReference, ResNet18BothWays) {
#if !IGNIS_REFERENCE_HAVE_TORCH
  GTEST_SKIP() << "PyTorch (python3-torch) not found at configure time";
#else
  fs::path dir = fs::temp_directory_path() / ("ignis_st_ref_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  // Ignis -> PyTorch: eval-mode logits after a train-mode forward moved the running stats.
  manual_seed(3);
  auto model = models::resnet18();
  model->train();
  model->forward(randn_like(zeros({4, 3, 64, 64})));
  model->eval();
  Tensor x = randn_like(zeros({2, 3, 64, 64}));
  Tensor logits = model->forward(x);
  save(*model, (dir / "ignis_resnet18.safetensors").string());
  save(nn::StateDict{{"input", x}, {"logits", logits}}, (dir / "ignis_io.safetensors").string());

  std::string cmd =
      std::string(IGNIS_PYTHON) + " " + IGNIS_SAFETENSORS_SCRIPT + " --dir " + dir.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "the PyTorch side failed: " << cmd;

  // PyTorch -> Ignis.
  auto ours = models::resnet18();
  load(*ours, (dir / "torch_resnet18.safetensors").string());
  ours->eval();
  TensorFile io = load_file((dir / "torch_io.safetensors").string());
  Tensor got = ours->forward(io.tensors.at("input"));
  EXPECT_TRUE(testing::all_close(got, testing::values_of(io.tensors.at("logits")), 1e-4, 1e-4));
  fs::remove_all(dir);
#endif
}

}  // namespace
}  // namespace ignis
