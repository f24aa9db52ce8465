// The arithmetic side of `ignis bench`: how many floating-point operations a model does per
// sample, counted analytically from its layers, and how many the CPU can do per second,
// measured with a short FMA loop.
#pragma once

#include <cstdint>
#include <string>

namespace ignis_cli {

/// Multiply-adds per sample in the convolution and linear layers of mlp, cnn, resnet18 or
/// airbench (the preset's network) on
/// `channels` x `size` x `size` inputs with `classes` outputs (the layouts of ignis/models.h;
/// ResNet with the CIFAR stem). ReLU, pooling, batch norm and the loss are left out, as FLOP
/// counts conventionally do: for these models they are under 1% of the total.
int64_t forward_macs(const std::string& model, int64_t channels, int64_t size, int64_t classes);

/// Forward FLOPs = 2 x MACs; a training step is about 3 x forward (the backward pass computes
/// the gradients of both the inputs and the weights, each as costly as the forward).
inline double forward_flops(int64_t macs) { return 2.0 * double(macs); }
inline double training_flops(int64_t macs) { return 3.0 * forward_flops(macs); }

/// The CPU's fp32 peak in FLOP/s, measured: every OpenMP thread runs independent chains of
/// vector fused multiply-adds (AVX-512 or AVX2+FMA when the CPU has them) from registers for
/// about `seconds`, so no memory traffic limits it. What a perfectly fed matmul could reach.
double measure_cpu_peak_flops(double seconds);
/// Which loop measure_cpu_peak_flops used: "avx512", "avx2-fma" or "generic".
std::string cpu_peak_method();

}  // namespace ignis_cli
