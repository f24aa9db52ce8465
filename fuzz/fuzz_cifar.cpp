// CIFAR binary batches. The first byte chooses the layout (even: CIFAR-10, one label byte of
// 10 classes; odd: CIFAR-100, coarse and fine label bytes of 20 and 100 classes); the rest is
// the file. Valid files load; others must end in ignis::IOError.
#include "fuzz_support.h"
#include "ignis/data/readers.h"
#include "ignis/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool cifar100 = data[0] % 2 == 1;
  const std::string path = ignis::fuzz::as_file(data + 1, size - 1);
  ignis::Tensor images;
  std::vector<ignis::Tensor> labels;
  try {
    if (cifar100)
      ignis::data::read_cifar_file(path, 2, {20, 100}, images, labels);
    else
      ignis::data::read_cifar_file(path, 1, {10}, images, labels);
  } catch (const ignis::IOError&) {
  }
  return 0;
}
