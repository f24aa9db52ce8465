// The NCCL backend, run under mpirun with one GPU per rank (label `cuda`; skipped with fewer
// GPUs than ranks; with one rank it checks the plumbing, with two the communication): each
// collective on each dtype against the same directly computed results as the MPI suite (CUDA
// tensors wrap cudaMalloc'd memory and move with cudaMemcpy, so those need no CUDA kernel of
// Ignis, only the NCCL backend), and DistributedDataParallel training through NCCL.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "distributed/collective_cases.h"
#include "ignis/cuda.h"
#include "ignis/ignis.h"
#include "ignis/models.h"

namespace ig = ignis;
namespace dist = ignis::distributed;
using namespace ig::testing::collective_cases;

namespace {

void free_device(void* p) { cudaFree(p); }

// A CUDA tensor holding `values` in dtype d (contiguous, on this rank's device).
ig::Tensor on_gpu(const std::vector<double>& values, const ig::Shape& shape, ig::DType d) {
  ig::Tensor host = ig::testing::make_input(values, shape, d).contiguous();
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(1, size_t(host.nbytes()))), cudaSuccess);
  cudaMemcpy(p, host.data_ptr(), size_t(host.nbytes()), cudaMemcpyHostToDevice);
  // A pageable copy may return before its data has landed, and the collectives order after
  // Ignis's compute stream, not the legacy stream this copy ran on.
  cudaDeviceSynchronize();
  return ig::from_blob(p, shape, d, std::nullopt, free_device, dist::device());
}
std::vector<double> from_gpu(const ig::Tensor& t) {
  ig::Tensor host = ig::empty(t.sizes(), t.dtype());
  cudaDeviceSynchronize();
  cudaMemcpy(host.data_ptr(), t.data_ptr(), size_t(t.nbytes()), cudaMemcpyDeviceToHost);
  return ig::testing::values_of(host);
}

bool have_gpus() { return dist::device().is_cuda(); }

}  // namespace

TEST(Nccl, EveryCollectiveOnEveryDType) {
  if (!have_gpus()) GTEST_SKIP() << "needs one GPU per rank";
  const int n = dist::world_size(), me = dist::rank();
  for (ig::DType d : kDTypes) {
    for (dist::ReduceOp op : ops_for(d)) {
      SCOPED_TRACE(fmt::format("{} {}", ig::dtype_name(d), dist::reduce_op_name(op)));
      ig::Tensor t = on_gpu(values(d, me, 35), {5, 7}, d);
      dist::all_reduce(t, op);
      EXPECT_TRUE(ig::testing::all_close(from_gpu(t), reduced(d, op, 35), 0, 0));
      ig::Tensor in = on_gpu(values(d, me, 35 * n), {5 * n, 7}, d);
      ig::Tensor out = on_gpu(std::vector<double>(35, 0), {5, 7}, d);
      dist::reduce_scatter_tensor(out, in, op);
      EXPECT_TRUE(ig::testing::all_close(from_gpu(out), reduced(d, op, 35, 35 * me), 0, 0));
    }
    SCOPED_TRACE(ig::dtype_name(d));
    ig::Tensor b = on_gpu(values(d, me, 35), {5, 7}, d);
    dist::broadcast(b, n - 1);
    EXPECT_TRUE(ig::testing::all_close(from_gpu(b), values(d, n - 1, 35), 0, 0));
    ig::Tensor in = on_gpu(values(d, me, 35), {5, 7}, d);
    ig::Tensor out = on_gpu(std::vector<double>(size_t(35 * n), 0), {5 * n, 7}, d);
    dist::all_gather_into_tensor(out, in);
    std::vector<double> expected;
    for (int r = 0; r < n; ++r) {
      auto v = values(d, r, 35);
      expected.insert(expected.end(), v.begin(), v.end());
    }
    EXPECT_TRUE(ig::testing::all_close(from_gpu(out), expected, 0, 0));
  }
}

TEST(Nccl, AsyncWorkAndBarrier) {
  if (!have_gpus()) GTEST_SKIP() << "needs one GPU per rank";
  ig::Tensor t = on_gpu(std::vector<double>(1 << 20, 1.0), {1 << 20}, ig::kFloat32);
  dist::WorkPtr w = dist::all_reduce(t, dist::ReduceOp::Sum, true);
  dist::default_group().barrier();
  w->wait();
  EXPECT_TRUE(w->is_completed());
  std::vector<double> v = from_gpu(t);
  EXPECT_EQ(v.front(), dist::world_size());
  EXPECT_EQ(v.back(), dist::world_size());
}

// DDP through NCCL: the MLP on this rank's GPU, each rank training on its share of a global
// batch, ends with the weights of one model trained on the whole batch without DDP on the same
// GPU. The gradients are the bucket views DDP reduced in place.
TEST(Nccl, DistributedDataParallelMatchesOneProcess) {
  if (!have_gpus()) GTEST_SKIP() << "needs one GPU per rank";
  const ig::Device dev = dist::device();
  const int n = dist::world_size(), me = dist::rank();
  constexpr int64_t kLocal = 8;
  ig::manual_seed(5);
  ig::models::MLP model, reference;
  reference.load_state_dict(model.state_dict());
  model.to(dev);
  reference.to(dev);
  ig::nn::DistributedDataParallel ddp(model);
  const ig::optim::SGDOptions sgd{.lr = 0.1, .momentum = 0.9};
  ig::optim::SGD opt(model.parameters(), sgd), ref_opt(reference.parameters(), sgd);
  for (int step = 0; step < 5; ++step) {
    ig::Generator g(uint64_t(100 + step));  // the same global batch on every rank
    const ig::Tensor x = ig::randn({kLocal * n, 10}, {}, &g).to(dev);
    const ig::Tensor y = ig::randint(0, 10, {kLocal * n}, {}, &g).to(dev);
    opt.zero_grad();
    ref_opt.zero_grad();
    ig::nn::functional::cross_entropy(reference(x), y).backward();
    ig::nn::functional::cross_entropy(ddp(x.narrow(0, kLocal * me, kLocal)),
                                      y.narrow(0, kLocal * me, kLocal))
        .backward();
    for (const auto& [name, p] : model.named_parameters())
      EXPECT_EQ(p.grad().data_ptr(), ddp.gradient_bucket_view(name).data_ptr()) << name;
    opt.step();
    ref_opt.step();
  }
  const auto mine = model.parameters(), theirs = reference.parameters();
  ASSERT_EQ(mine.size(), theirs.size());
  for (size_t i = 0; i < mine.size(); ++i)
    EXPECT_TRUE(ig::testing::all_close(ig::testing::values_of(mine[i].cpu()),
                                       ig::testing::values_of(theirs[i].cpu()), 1e-5, 1e-6))
        << "parameter " << i;
}
