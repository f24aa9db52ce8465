// ResNet-18 on CIFAR-10 from its binary files, the whole workflow in user code: read the
// data, pool and split it 70/10/20, load batches to the device (CUDA when available), train
// with SGD and momentum, evaluate with ignis::metrics, save the model.
// Usage: resnet18_cifar10 CIFAR10_DIR [--epochs N] [--limit N] [--out FILE]
#include <ignis/ignis.h>
#include <ignis/metrics.h>

#include <cstdio>
#include <map>
#include <string>

namespace ig = ignis;
namespace F = ignis::nn::functional;

int main(int argc, char** argv) {
  // --limit N uses only the first N pooled images (quick runs, tests); 0 = all.
  std::map<std::string, std::string> args{
      {"--epochs", "15"}, {"--limit", "0"}, {"--out", "resnet18_cifar10.safetensors"}};
  bool ok = argc >= 2 && argc % 2 == 0;
  for (int i = 2; ok && i < argc; i += 2)
    if ((ok = args.count(argv[i]) > 0)) args[argv[i]] = argv[i + 1];
  if (!ok) {
    std::fprintf(stderr, "usage: %s CIFAR10_DIR [--epochs N] [--limit N] [--out FILE]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1], out = args["--out"];
  const int64_t epochs = std::stoll(args["--epochs"]), limit = std::stoll(args["--limit"]);

  // The 50,000 training and 10,000 test images pooled, then split 70/10/20 from seed 0.
  ig::data::LabeledImages pool = ig::data::cifar10(dir, true), test = ig::data::cifar10(dir, false);
  pool.images = ig::cat({pool.images, test.images});
  pool.labels = ig::cat({pool.labels, test.labels});
  const int64_t n = limit > 0 ? std::min(limit, pool.images.size(0)) : pool.images.size(0);
  pool.images = pool.images.narrow(0, 0, n).contiguous();
  pool.labels = pool.labels.narrow(0, 0, n).contiguous();
  auto all = ig::data::make_dataset(pool);
  auto parts = ig::data::split_indices(n, {0.7, 0.1, 0.2}, /*seed=*/0);

  // uint8 batches go to the device, then become floats normalised by CIFAR-10's statistics.
  const ig::Device device = ig::cuda::is_available() ? ig::Device::cuda(0) : ig::Device::cpu();
  auto normalise = ig::data::Compose(0, {std::make_shared<ig::data::ToFloat>(),
      std::make_shared<ig::data::Normalize>(std::vector<double>{0.4914, 0.4822, 0.4465},
                                            std::vector<double>{0.2470, 0.2435, 0.2616})});
  auto subset = [&](int k) { return std::make_shared<ig::data::Subset>(all, parts[k]); };
  ig::data::DataLoader train_loader(subset(0), {.batch_size = 128, .shuffle = true,
                                                .device = device, .transform = normalise});
  ig::data::DataLoader val_loader(subset(1), {.batch_size = 256, .device = device, .transform = normalise});
  ig::data::DataLoader test_loader(subset(2), {.batch_size = 256, .device = device, .transform = normalise});

  ig::manual_seed(0);
  auto model = ig::models::resnet18({.in_channels = 3, .num_classes = 10,
                                     .stem = ig::models::ResNetStem::Cifar});
  model->to(device);
  ig::optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4,
                                           .nesterov = true});
  ig::optim::CosineAnnealingLR schedule(opt, epochs);

  auto evaluate = [&](ig::data::DataLoader& loader) {
    ig::metrics::ClassificationMetrics m(10);
    ig::NoGradGuard no_grad;
    model->eval();
    for (auto& batch : loader) m.update((*model)(batch.x()), batch.y());
    model->train();
    return m;
  };
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    double loss_sum = 0;
    for (auto& batch : train_loader) {
      ig::Tensor loss = F::cross_entropy((*model)(batch.x()), batch.y());
      opt.zero_grad();
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>() * double(batch.size());
    }
    schedule.step();
    std::printf("epoch %lld  train loss %.4f  val accuracy %.4f (%s)\n", (long long)epoch,
                loss_sum / double(parts[0].size()), evaluate(val_loader).accuracy(),
                device.str().c_str());
  }

  ig::metrics::ClassificationMetrics m = evaluate(test_loader);
  std::printf("test accuracy %.4f  macro precision %.4f  macro recall %.4f\n\n%s", m.accuracy(),
              m.macro_average().precision, m.macro_average().recall,
              m.format_report(pool.classes).c_str());
  ig::save(*model, out, {{"model", "resnet18"}, {"data", "cifar10"}});
  std::printf("saved %s\n", out.c_str());
  return 0;
}
