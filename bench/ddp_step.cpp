// The two speed checks of data-parallel training on the CPU, run under mpirun
// (`mpirun -np 2 bench/ddp_step [per-rank batch] [rounds]`). Rank 0 prints JSON lines.
//
// 1. Overlap: the training step (forward, loss, backward, SGD) of ResNet-18 (CIFAR stem,
//    3x32x32, 10 classes) at the same per-rank batch, timed in the same job three ways:
//    "local" — every rank steps its own copy, no communication (the single-rank step, under
//    the same CPU contention as the others); "ddp" — wrapped in DistributedDataParallel
//    (25 MiB buckets reduced during backward); "ddp_no_overlap" — the same gradients reduced
//    only after backward, as one all-reduce per bucket (what hiding saves). The three run in
//    turn, `rounds` times, and each reports its median. The check is ddp / local <= 1.15.
// 2. Bucketed bandwidth: DDP's gradient reduction alone, on a module whose parameters have
//    ResNet-18's shapes and whose backward is almost free, against MPI_Allreduce of the same
//    bytes in one call and in DDP's bucket sizes. The check is ddp bandwidth >= 0.8 x MPI's.
//    Measured twice: with zero_grad() dropping the gradients (each backward copies them into
//    the buckets once) and with zero_grad(false) (backward adds into the buckets in place).
// 3. Where the communication goes in the DDP step: a comm_hook timestamps when each bucket's
//    all-reduce starts (relative to the start of backward) and how long backward then blocks
//    waiting for them. A bucket started well before backward ends and a short wait mean the
//    all-reduce ran behind the rest of backward; a wait as long as the all-reduce itself
//    means it did not.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "ignis/ignis.h"

namespace ig = ignis;
namespace dist = ignis::distributed;
namespace nn = ignis::nn;
namespace F = ignis::nn::functional;

namespace {

// Every rank must run fn the same number of times (it is a collective): rank 0's timing
// decides, then each measurement is the median of that many calls.
double time_together(const std::function<void()>& fn, double min_time) {
  dist::barrier();
  int reps = 0;
  if (dist::rank() == 0) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    const double once = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    reps = std::clamp(int(min_time / std::max(once, 1e-6)), 5, 1000);
  } else {
    fn();
  }
  ig::Tensor r = ig::full({1}, reps, ig::kInt32);
  dist::broadcast(r, 0);
  reps = r.item<int>();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  std::vector<double> med{t[t.size() / 2]};  // the slowest rank's median is the step's
  ig::Tensor m = ig::tensor<double>(med);
  dist::all_reduce(m, dist::ReduceOp::Max);
  return m.item<double>();
}

// Like time_together for several functions, run in turn within each round, so a change of
// the machine's load during the measurement touches all of them alike.
std::vector<double> time_interleaved(const std::vector<std::function<void()>>& fns, int rounds) {
  dist::barrier();
  for (const auto& fn : fns) fn();  // warm-up
  std::vector<std::vector<double>> t(fns.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < fns.size(); ++i) {
      const auto a = std::chrono::steady_clock::now();
      fns[i]();
      t[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    }
  std::vector<double> med;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  ig::Tensor m = ig::tensor<double>(med);
  dist::all_reduce(m, dist::ReduceOp::Max);  // the slowest rank's median is the step's
  return std::vector<double>(m.data_ptr<double>(), m.data_ptr<double>() + med.size());
}

void print(const char* what, double seconds, const char* extra = "") {
  if (dist::rank() == 0)
    std::printf("{\"bench\": \"ddp_step\", \"what\": \"%s\", \"ranks\": %d, \"seconds\": %.6g%s}\n",
                what, dist::world_size(), seconds, extra);
  std::fflush(stdout);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// What one DDP backward did with its buckets, in seconds from the start of backward.
struct BucketTimeline {
  std::chrono::steady_clock::time_point backward_start;
  std::vector<double> launched;  // when each bucket's all-reduce started
  double blocked = 0;            // time spent in wait() for the buckets
};

// A Work that adds the time its wait() blocks to the timeline.
class TimedWork : public dist::Work {
 public:
  TimedWork(dist::WorkPtr inner, BucketTimeline& timeline)
      : inner_(std::move(inner)), timeline_(timeline) {}
  bool is_completed() override { return inner_->is_completed(); }
  void wait() override {
    const auto a = std::chrono::steady_clock::now();
    inner_->wait();
    timeline_.blocked += seconds_since(a);
  }

 private:
  dist::WorkPtr inner_;
  BucketTimeline& timeline_;
};

// Parameters shaped like another module's; forward multiplies each by a scalar input, so
// backward only fills each gradient with that scalar.
struct SameShapes : nn::Module {
  std::vector<ig::Tensor> params;
  explicit SameShapes(const nn::Module& like) {
    params.reserve(like.parameters().size());
    int i = 0;
    for (const auto& p : like.parameters()) {
      params.push_back(ig::zeros(p.sizes()));
      register_parameter("p" + std::to_string(i++), &params.back());
    }
  }
  ig::Tensor forward(const ig::Tensor& x) override {
    ig::Tensor total;
    for (const auto& p : params) {
      ig::Tensor s = (p * x).sum();
      total = total.defined() ? total + s : s;
    }
    return total;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 16;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;  // of the three step kinds
  const double seconds = 2.0;  // per bandwidth measurement
  dist::init({.device = ig::Device::cpu()});
  ig::set_num_threads(1);

  // ---- 1. the training step --------------------------------------------------------------
  ig::manual_seed(0);
  ig::models::ResNetConfig cfg{3, 10, ig::models::ResNetStem::Cifar};
  auto local_model = ig::models::resnet18(cfg);
  auto ddp_model = ig::models::resnet18(cfg);
  nn::DistributedDataParallel ddp(*ddp_model);
  ig::Tensor x = ig::randn({batch, 3, 32, 32});
  ig::Tensor y = ig::randint(0, 10, {batch});
  auto step_of = [&](nn::Module& m, nn::Module& params, auto after_backward) {
    auto opt = std::make_shared<ig::optim::SGD>(params.parameters(),
                                                ig::optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
    return [&m, &x, &y, opt, after_backward] {
      opt->zero_grad();
      F::cross_entropy(m(x), y).backward();
      after_backward();
      opt->step();
    };
  };
  auto nothing = [] {};
  // Reduce after backward: the same bucket sizes as DDP (25 MiB), one after another.
  auto reduce_after = [&] {
    std::vector<ig::Tensor> grads;
    int64_t bytes = 0;
    auto flush = [&] {
      if (grads.empty()) return;
      std::vector<ig::Tensor> flat;
      for (auto& g : grads) flat.push_back(g.reshape({-1}));
      ig::Tensor bucket = ig::cat(flat);
      dist::all_reduce(bucket, dist::ReduceOp::Avg);
      grads.clear();
      bytes = 0;
    };
    auto params = local_model->parameters();
    for (auto it = params.rbegin(); it != params.rend(); ++it) {
      grads.push_back(it->grad());
      bytes += it->grad().numel() * 4;
      if (bytes >= (int64_t(25) << 20)) flush();
    }
    flush();
  };
  const std::vector<double> steps = time_interleaved(
      {step_of(*local_model, *local_model, nothing), step_of(ddp, *ddp_model, nothing),
       step_of(*local_model, *local_model, reduce_after)},
      rounds);
  const double t_local = steps[0], t_ddp = steps[1], t_after = steps[2];
  char extra[160];
  std::snprintf(extra, sizeof extra, ", \"model\": \"resnet18\", \"per_rank_batch\": %lld",
                (long long)batch);
  print("step_local", t_local, extra);
  print("step_ddp", t_ddp, extra);
  print("step_ddp_no_overlap", t_after, extra);
  if (dist::rank() == 0)
    std::printf("{\"bench\": \"ddp_step\", \"what\": \"overlap\", \"ddp_over_local\": %.3f, "
                "\"no_overlap_over_local\": %.3f, \"target\": 1.15}\n",
                t_ddp / t_local, t_after / t_local);

  // ---- 2. bucketed all-reduce bandwidth ----------------------------------------------------
  SameShapes grads_only(*local_model);
  nn::DistributedDataParallel ddp_grads(grads_only);
  const ig::Tensor one = ig::ones({1});
  int64_t total_bytes = 0;
  for (const auto& p : grads_only.parameters()) total_bytes += p.numel() * 4;
  // Backward without and with DDP; set_to_none as zero_grad's argument.
  auto backward_of = [&](nn::Module& m, bool set_to_none) {
    return [&m, &grads_only, &one, set_to_none] {
      grads_only.zero_grad(set_to_none);
      m(one).backward();
    };
  };
  const double t_fill = time_together(backward_of(grads_only, true), seconds);
  const double t_bucketed = time_together(backward_of(ddp_grads, true), seconds);
  const double t_fill_kept = time_together(backward_of(grads_only, false), seconds);
  const double t_bucketed_kept = time_together(backward_of(ddp_grads, false), seconds);
  ig::Tensor flat = ig::ones({total_bytes / 4});
  const double t_mpi_one = time_together(
      [&] {
        MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr(), int(flat.numel()), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      },
      seconds);
  std::vector<int64_t> bucket_elems;  // DDP's buckets, from its own listing
  for (const auto& names : ddp_grads.bucket_parameter_names()) {
    int64_t n = 0;
    for (const auto& [name, p] : grads_only.named_parameters())
      for (const auto& want : names)
        if (want == name) n += p.numel();
    bucket_elems.push_back(n);
  }
  const double t_mpi_buckets = time_together(
      [&] {
        int64_t offset = 0;
        for (int64_t n : bucket_elems) {
          MPI_Allreduce(MPI_IN_PLACE, flat.data_ptr<float>() + offset, int(n), MPI_FLOAT,
                        MPI_SUM, MPI_COMM_WORLD);
          offset += n;
        }
      },
      seconds);
  const double t_comm = std::max(t_bucketed - t_fill, 1e-9);
  const double t_comm_kept = std::max(t_bucketed_kept - t_fill_kept, 1e-9);
  auto gbps = [&](double s) { return double(total_bytes) / s / 1e9; };
  if (dist::rank() == 0) {
    std::printf("{\"bench\": \"ddp_step\", \"what\": \"bucketed_all_reduce\", \"ranks\": %d, "
                "\"bytes\": %lld, \"buckets\": %zu, \"backward_without_ddp_s\": %.6g, "
                "\"backward_with_ddp_s\": %.6g, \"ddp_comm_s\": %.6g, \"mpi_one_call_s\": %.6g, "
                "\"mpi_same_buckets_s\": %.6g, \"ddp_GBps\": %.3f, \"mpi_one_call_GBps\": %.3f, "
                "\"mpi_same_buckets_GBps\": %.3f, \"ddp_over_mpi_bandwidth\": %.3f, "
                "\"target\": 0.8}\n",
                dist::world_size(), (long long)total_bytes, bucket_elems.size(), t_fill,
                t_bucketed, t_comm, t_mpi_one, t_mpi_buckets, gbps(t_comm), gbps(t_mpi_one),
                gbps(t_mpi_buckets), t_mpi_buckets / t_comm);
    std::printf("{\"bench\": \"ddp_step\", \"what\": \"bucketed_all_reduce_zeroed_in_place\", "
                "\"ranks\": %d, \"backward_without_ddp_s\": %.6g, \"backward_with_ddp_s\": %.6g, "
                "\"ddp_comm_s\": %.6g, \"ddp_GBps\": %.3f, \"ddp_over_mpi_bandwidth\": %.3f}\n",
                dist::world_size(), t_fill_kept, t_bucketed_kept, t_comm_kept,
                gbps(t_comm_kept), t_mpi_buckets / t_comm_kept);
  }

  // ---- 3. where the step's communication goes ------------------------------------------------
  // The hook sums without averaging: the timing is the point, and the default path's division
  // happens as gradients enter the buckets, not in the collective.
  ig::manual_seed(0);
  auto timed_model = ig::models::resnet18(cfg);
  BucketTimeline timeline;
  nn::DistributedDataParallel ddp_timed(
      *timed_model, {.comm_hook = [&timeline](dist::ProcessGroup& group, ig::Tensor& bucket) {
        timeline.launched.push_back(seconds_since(timeline.backward_start));
        return std::make_shared<TimedWork>(group.all_reduce(bucket, dist::ReduceOp::Sum, true),
                                           timeline);
      }});
  std::vector<double> backward_s, blocked_s;
  std::vector<std::vector<double>> launched_s(ddp_timed.bucket_parameter_names().size());
  ig::optim::SGD timed_opt(timed_model->parameters(), {.lr = 0.01, .momentum = 0.9});
  for (int r = 0; r < rounds + 1; ++r) {  // the first round warms up
    timed_opt.zero_grad();
    ig::Tensor loss = F::cross_entropy(ddp_timed(x), y);
    timeline = {std::chrono::steady_clock::now(), {}, 0};
    loss.backward();
    const double total = seconds_since(timeline.backward_start);
    timed_opt.step();
    if (r == 0) continue;
    backward_s.push_back(total);
    blocked_s.push_back(timeline.blocked);
    for (size_t b = 0; b < launched_s.size(); ++b) launched_s[b].push_back(timeline.launched[b]);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  if (dist::rank() == 0) {
    std::string launches;
    for (const auto& v : launched_s)
      launches += (launches.empty() ? "" : ", ") + std::to_string(median(v));
    std::printf("{\"bench\": \"ddp_step\", \"what\": \"overlap_timeline\", \"ranks\": %d, "
                "\"backward_s\": %.6g, \"bucket_started_at_s\": [%s], \"blocked_in_wait_s\": %.6g, "
                "\"note\": \"rank 0, medians; started_at is from the start of backward\"}\n",
                dist::world_size(), median(backward_s), launches.c_str(), median(blocked_s));
  }
  dist::destroy();
}
