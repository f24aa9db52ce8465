// ProcessGroup's front end: argument checks shared by every backend, staging of
// non-contiguous tensors through contiguous copies, the choice of backend by device (MPI for
// CPU tensors, NCCL for CUDA tensors), and blocking versus async_op calls.
#include "core/graph_capture.h"
#include "core/shape.h"
#include "distributed/backend.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"

namespace ignis::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

using detail::fail;

namespace {

// A contiguous tensor to hand the backend, and how to copy its result back when it is a copy.
struct Staged {
  Tensor buffer;
  std::function<void()> copy_back;  // empty when buffer is the caller's tensor
};
Staged stage(const Tensor& t, bool written) {
  if (t.is_contiguous()) return {t, {}};
  Staged s{t.contiguous(), {}};
  if (written)
    s.copy_back = [dst = t, src = s.buffer]() mutable {
      NoGradGuard no_grad;
      dst.copy_(src);
    };
  return s;
}

WorkPtr finish(WorkPtr w, std::function<void()> copy_back, bool async_op) {
  if (copy_back) w = detail::then(std::move(w), std::move(copy_back));
  if (!async_op) w->wait();
  return w;
}

}  // namespace

ProcessGroup::ProcessGroup(std::shared_ptr<detail::Backend> cpu) : cpu_(std::move(cpu)) {}
ProcessGroup::~ProcessGroup() = default;
int ProcessGroup::rank() const { return cpu_->rank(); }
int ProcessGroup::size() const { return cpu_->size(); }
std::chrono::milliseconds ProcessGroup::timeout() const { return cpu_->timeout(); }
void ProcessGroup::set_timeout(std::chrono::milliseconds timeout) {
  cpu_->set_timeout(timeout);
  if (cuda_) cuda_->set_timeout(timeout);
}

detail::Backend& ProcessGroup::backend_for(const Tensor& t, const char* op) {
  if (!t.defined()) fail(op, rank(), size(), "got an undefined tensor");
  if (t.is_cpu()) return *cpu_;
  if (!cuda_) {
    // The communicator's set-up (MPI, ncclCommInitRank, a stream, cudaMalloc) must not run
    // inside a CUDA graph capture either: refused before it, as the collective would be.
    ignis::detail::refuse_during_capture(op, "runs an NCCL collective");
    if (!is_initialized() || !(device() == t.device()))
      fail(op, rank(), size(),
           fmt::format("a tensor on {} but this process's device is {}; CUDA collectives run "
                       "on the device init() picked",
                       t.device().str(), is_initialized() ? device().str() : "unset"));
    cuda_ = detail::make_nccl_backend(*cpu_, t.device(), cpu_->timeout());
  }
  return *cuda_;
}

WorkPtr ProcessGroup::all_reduce(Tensor& tensor, ReduceOp op, bool async_op) {
  auto& b = backend_for(tensor, "all_reduce");
  if (op == ReduceOp::Avg && !is_floating(tensor.dtype()))
    fail("all_reduce", rank(), size(),
         fmt::format("avg needs a floating tensor, got {} (use sum and divide)",
                     dtype_name(tensor.dtype())));
  Staged s = stage(tensor, true);
  return finish(b.all_reduce(s.buffer, op), std::move(s.copy_back), async_op);
}

WorkPtr ProcessGroup::broadcast(Tensor& tensor, int src, bool async_op) {
  auto& b = backend_for(tensor, "broadcast");
  if (src < 0 || src >= size())
    fail("broadcast", rank(), size(), fmt::format("source rank {} is not in the group", src));
  Staged s = stage(tensor, true);
  return finish(b.broadcast(s.buffer, src), std::move(s.copy_back), async_op);
}

WorkPtr ProcessGroup::all_gather_into_tensor(Tensor& output, const Tensor& input,
                                             bool async_op) {
  auto& b = backend_for(input, "all_gather");
  if (!output.defined() || output.device() != input.device() ||
      output.dtype() != input.dtype() || output.numel() != input.numel() * size())
    fail("all_gather", rank(), size(),
         fmt::format("output must be a {} tensor on {} with {} x {} elements, got {}",
                     dtype_name(input.dtype()), input.device().str(), size(), input.numel(),
                     output.defined() ? fmt::format("{} {} on {}", dtype_name(output.dtype()),
                                                    ignis::detail::shape_str(output.sizes()),
                                                    output.device().str())
                                      : std::string("an undefined tensor")));
  Staged in = stage(input, false), out = stage(output, true);
  return finish(b.all_gather(out.buffer, in.buffer), std::move(out.copy_back), async_op);
}

WorkPtr ProcessGroup::all_gather(std::vector<Tensor>& outputs, const Tensor& input,
                                 bool async_op) {
  if (int64_t(outputs.size()) != size())
    fail("all_gather", rank(), size(),
         fmt::format("expected {} output tensors, got {}", size(), outputs.size()));
  for (const Tensor& o : outputs)
    if (!o.defined() || o.sizes() != input.sizes() || o.dtype() != input.dtype())
      fail("all_gather", rank(), size(),
           fmt::format("every output must be a {} tensor of shape {}", dtype_name(input.dtype()),
                       ignis::detail::shape_str(input.sizes())));
  Shape flat_shape{size() * input.numel()};
  Tensor flat = empty(flat_shape, {input.dtype(), input.device()});
  auto w = all_gather_into_tensor(flat, input, true);
  int64_t n = input.numel();
  auto split = [outputs, flat, n]() mutable {
    NoGradGuard no_grad;
    for (size_t r = 0; r < outputs.size(); ++r)
      outputs[r].copy_(flat.narrow(0, int64_t(r) * n, n).view(outputs[r].sizes()));
  };
  return finish(std::move(w), split, async_op);
}

WorkPtr ProcessGroup::reduce_scatter_tensor(Tensor& output, const Tensor& input, ReduceOp op,
                                            bool async_op) {
  auto& b = backend_for(input, "reduce_scatter");
  if (!output.defined() || output.device() != input.device() ||
      output.dtype() != input.dtype() || input.numel() != output.numel() * size())
    fail("reduce_scatter", rank(), size(),
         fmt::format("input must hold {} x the output's elements in the same dtype and device; "
                     "got input {} {}, output {}",
                     size(), dtype_name(input.dtype()), ignis::detail::shape_str(input.sizes()),
                     output.defined() ? fmt::format("{} {}", dtype_name(output.dtype()),
                                                    ignis::detail::shape_str(output.sizes()))
                                      : std::string("undefined")));
  if (op == ReduceOp::Avg && !is_floating(input.dtype()))
    fail("reduce_scatter", rank(), size(),
         fmt::format("avg needs a floating tensor, got {}", dtype_name(input.dtype())));
  Staged in = stage(input, false), out = stage(output, true);
  return finish(b.reduce_scatter(out.buffer, in.buffer, op), std::move(out.copy_back),
                async_op);
}

WorkPtr ProcessGroup::reduce_scatter(Tensor& output, const std::vector<Tensor>& inputs,
                                     ReduceOp op, bool async_op) {
  if (int64_t(inputs.size()) != size())
    fail("reduce_scatter", rank(), size(),
         fmt::format("expected {} input tensors, got {}", size(), inputs.size()));
  std::vector<Tensor> flat;
  for (const Tensor& t : inputs) {
    if (!t.defined() || t.sizes() != output.sizes())
      fail("reduce_scatter", rank(), size(),
           fmt::format("every input must have the output's shape {}", ignis::detail::shape_str(output.sizes())));
    flat.push_back(t.reshape({t.numel()}));
  }
  Tensor in = cat(flat, 0);
  return reduce_scatter_tensor(output, in, op, async_op);
}

WorkPtr ProcessGroup::barrier(bool async_op) {
  auto w = cpu_->barrier();
  if (!async_op) w->wait();
  return w;
}

std::shared_ptr<ProcessGroup> ProcessGroup::duplicate() const {
  auto g = std::make_shared<ProcessGroup>(cpu_->duplicate());
  return g;
}

}  // namespace ignis::distributed
