// Collectives on CPU tensors, run under mpirun: every collective on every dtype and memory
// layout against the result computed directly on each rank from the formula every rank's input
// follows; asynchronous calls in flight together; argument errors.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>

#include "ignis/distributed.h"
#include "distributed/collective_cases.h"
#include "support/test_support.h"

namespace ig = ignis;
namespace dist = ignis::distributed;
using ig::testing::all_close;
using ig::testing::make_input;
using ig::testing::round_to;
using ig::testing::values_of;
using namespace ig::testing::collective_cases;

namespace {

const ig::Shape kShape{5, 7};  // 35 elements: not a multiple of any vector width

std::string trace(ig::DType d, ig::testing::Layout l, const char* what = "") {
  return fmt::format("{} {} {}", ig::dtype_name(d), ig::testing::layout_name(l), what);
}

}  // namespace

TEST(Collectives, AllReduceEveryDTypeOpAndLayout) {
  for (ig::DType d : kDTypes)
    for (auto layout : ig::testing::kAllLayouts)
      for (dist::ReduceOp op : ops_for(d)) {
        SCOPED_TRACE(trace(d, layout, dist::reduce_op_name(op)));
        ig::Tensor t = make_input(values(d, dist::rank(), 35), kShape, d, layout);
        dist::all_reduce(t, op);
        EXPECT_TRUE(all_close(values_of(t), reduced(d, op, 35), 0, 0));
      }
}

TEST(Collectives, BroadcastFromTheLastRank) {
  const int src = dist::world_size() - 1;
  for (ig::DType d : kDTypes)
    for (auto layout : ig::testing::kAllLayouts) {
      SCOPED_TRACE(trace(d, layout));
      ig::Tensor t = make_input(values(d, dist::rank(), 35), kShape, d, layout);
      dist::broadcast(t, src);
      EXPECT_TRUE(all_close(values_of(t), values(d, src, 35), 0, 0));
    }
}

TEST(Collectives, AllGatherIntoTensorAndList) {
  const int n = dist::world_size();
  for (ig::DType d : kDTypes)
    for (auto layout : ig::testing::kAllLayouts) {
      SCOPED_TRACE(trace(d, layout));
      ig::Tensor in = make_input(values(d, dist::rank(), 35), kShape, d, layout);
      std::vector<double> expected;
      for (int r = 0; r < n; ++r) {
        auto v = values(d, r, 35);
        expected.insert(expected.end(), v.begin(), v.end());
      }
      ig::Tensor out = make_input(std::vector<double>(size_t(35 * n), 0), {5 * n, 7}, d, layout);
      dist::all_gather_into_tensor(out, in);
      EXPECT_TRUE(all_close(values_of(out), expected, 0, 0));

      std::vector<ig::Tensor> list;
      for (int r = 0; r < n; ++r) list.push_back(ig::zeros(kShape, d));
      dist::all_gather(list, in);
      for (int r = 0; r < n; ++r) EXPECT_TRUE(all_close(values_of(list[r]), values(d, r, 35), 0, 0));
    }
}

TEST(Collectives, ReduceScatterTensorAndList) {
  const int n = dist::world_size(), me = dist::rank();
  for (ig::DType d : kDTypes)
    for (auto layout : ig::testing::kAllLayouts)
      for (dist::ReduceOp op : ops_for(d)) {
        SCOPED_TRACE(trace(d, layout, dist::reduce_op_name(op)));
        ig::Tensor in = make_input(values(d, me, 35 * n), {5 * n, 7}, d, layout);
        ig::Tensor out = make_input(std::vector<double>(35, 0), kShape, d, layout);
        dist::reduce_scatter_tensor(out, in, op);
        EXPECT_TRUE(all_close(values_of(out), reduced(d, op, 35, 35 * me), 0, 0));

        std::vector<ig::Tensor> chunks;
        for (int r = 0; r < n; ++r)
          chunks.push_back(make_input(values(d, me, 35, 35 * r), kShape, d, layout));
        ig::Tensor out2 = ig::zeros(kShape, d);
        dist::reduce_scatter(out2, chunks, op);
        EXPECT_TRUE(all_close(values_of(out2), reduced(d, op, 35, 35 * me), 0, 0));
      }
}

TEST(Collectives, EmptyAndLargeTensors) {
  ig::Tensor empty = ig::zeros({0}, ig::kFloat32);
  dist::all_reduce(empty);
  EXPECT_EQ(empty.numel(), 0);
  // 3 million elements: many MPI segments.
  const int64_t n = 3'000'000;
  ig::Tensor big = ig::full({n}, double(dist::rank() + 1), ig::kFloat32);
  dist::all_reduce(big);
  const double s = dist::world_size() * (dist::world_size() + 1) / 2.0;
  std::vector<float> v = big.to_vector<float>();
  EXPECT_EQ(v.front(), s);
  EXPECT_EQ(v[size_t(n / 2)], s);
  EXPECT_EQ(v.back(), s);
}

// Three collectives in flight at once, local work meanwhile, waited for in reverse order:
// each result is right, and each handle reports completion afterwards.
TEST(Collectives, AsyncCallsOverlapWithComputation) {
  const int n = dist::world_size(), me = dist::rank();
  ig::Tensor a = ig::full({1 << 16}, double(me + 1), ig::kFloat64);
  ig::Tensor b = ig::full({1000}, double(me == 0 ? 42 : -1), ig::kInt64);
  ig::Tensor in = ig::full({4}, double(me), ig::kInt32);
  ig::Tensor gathered = ig::zeros({4 * n}, ig::kInt32);
  dist::WorkPtr wa = dist::all_reduce(a, dist::ReduceOp::Max, true);
  dist::WorkPtr wb = dist::broadcast(b, 0, true);
  dist::WorkPtr wc = dist::all_gather_into_tensor(gathered, in, true);
  ig::Tensor m = ig::ones({128, 128});
  double local = ig::matmul(m, m).sum().item<double>();  // computation while they are in flight
  EXPECT_EQ(local, 128.0 * 128 * 128);
  wc->wait();
  wb->wait();
  wa->wait();
  EXPECT_TRUE(wa->is_completed() && wb->is_completed() && wc->is_completed());
  EXPECT_EQ(a.min().item<double>(), n);
  EXPECT_EQ(a.max().item<double>(), n);
  EXPECT_EQ(b.min().item<int64_t>(), 42);
  EXPECT_EQ(b.max().item<int64_t>(), 42);
  std::vector<int32_t> g = gathered.to_vector<int32_t>();
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 4; ++k) EXPECT_EQ(g[size_t(4 * r + k)], r);
}

// is_completed() alone drives an asynchronous all-reduce to completion (no wait()).
TEST(Collectives, PollingCompletesAsyncWork) {
  ig::Tensor t = ig::full({1 << 18}, 1.0, ig::kFloat32);
  dist::WorkPtr w = dist::all_reduce(t, dist::ReduceOp::Sum, true);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!w->is_completed() && std::chrono::steady_clock::now() < deadline) {
  }
  ASSERT_TRUE(w->is_completed());
  EXPECT_EQ(t.min().item<double>(), dist::world_size());
  EXPECT_EQ(t.max().item<double>(), dist::world_size());
}

TEST(Collectives, BarrierAndDuplicateGroup) {
  dist::barrier();
  auto group = dist::default_group().duplicate();
  EXPECT_EQ(group->rank(), dist::rank());
  EXPECT_EQ(group->size(), dist::world_size());
  // Interleaved async calls on two groups do not mix.
  ig::Tensor x = ig::full({3}, double(dist::rank()), ig::kFloat64);
  ig::Tensor y = ig::full({3}, 1.0, ig::kFloat64);
  auto wx = dist::all_reduce(x, dist::ReduceOp::Max, true);
  auto wy = group->all_reduce(y, dist::ReduceOp::Sum, true);
  wy->wait();
  wx->wait();
  EXPECT_EQ(x.max().item<double>(), dist::world_size() - 1);
  EXPECT_EQ(y.max().item<double>(), dist::world_size());
}

// Bad arguments are found before any communication, on every rank alike, and named.
TEST(Collectives, ErrorsNameTheCollectiveAndTheRank) {
  const std::string who = fmt::format("rank {} of {}", dist::rank(), dist::world_size());
  auto expect_error = [&](const std::function<void()>& f, const std::string& op,
                          const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "no error for " << op;
    } catch (const dist::DistributedError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("[" + op + "] " + who), std::string::npos) << m;
      EXPECT_NE(m.find(what), std::string::npos) << m;
    }
  };
  ig::Tensor ints = ig::zeros({4}, ig::kInt64);
  expect_error([&] { dist::all_reduce(ints, dist::ReduceOp::Avg); }, "all_reduce",
               "avg needs a floating tensor, got int64");
  ig::Tensor f = ig::zeros({4});
  expect_error([&] { dist::broadcast(f, dist::world_size()); }, "broadcast",
               fmt::format("source rank {} is not in the group", dist::world_size()));
  ig::Tensor small = ig::zeros({3});
  expect_error([&] { dist::all_gather_into_tensor(small, f); }, "all_gather",
               "output must be a float32 tensor");
  expect_error([&] { dist::reduce_scatter_tensor(f, small); }, "reduce_scatter",
               "input must hold");
  // The group still works afterwards.
  ig::Tensor one = ig::ones({2});
  dist::all_reduce(one);
  EXPECT_EQ(one.max().item<double>(), dist::world_size());
}
