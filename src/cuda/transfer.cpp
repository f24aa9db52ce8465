// Copies between the host and a device and between two devices (transfer_kernel), ordered
// on the devices' current streams.
//   host -> device: cudaMemcpyAsync on the device's stream. From pageable memory the runtime
//     has copied the source out before it returns, so the host may reuse it at once; from
//     pinned memory the copy is truly asynchronous, so the source block is recorded as used
//     by the stream (the pinned cache reuses it only after the copy) and, unless
//     non_blocking, the stream is synchronised.
//   device -> host: synchronised (the caller reads the result next), except into pinned
//     memory with non_blocking, where the caller must synchronise the stream itself; after
//     the wait, errors kernels reported since are raised (Note [Deferred kernel errors]).
//   device -> device: the destination's stream waits for the source's work, copies, and the
//     source's stream then waits for the copy (so the source's memory is not reused early).
#include "core/dispatch.h"
#include "core/graph_capture.h"
#include "core/tensor_impl.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/deferred_errors.h"

namespace ignis::cuda::detail {
namespace {
constexpr const char* kOp = "to(device)";

/// Makes `to` wait for the work queued on `from` so far; the event goes, whatever fails.
void event_wait(cudaStream_t from, int from_device, cudaStream_t to) {
  DeviceGuard guard(from_device);
  cudaEvent_t e = nullptr;
  IGNIS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), kOp);
  cudaError_t err = cudaEventRecord(e, from);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(to, e, 0);
  const cudaError_t destroyed = cudaEventDestroy(e);  // released once the wait has happened
  IGNIS_CUDA_CHECK(err, kOp);
  IGNIS_CUDA_CHECK(destroyed, kOp);
}

void transfer(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const size_t nbytes = size_t(src.numel()) * itemsize(src.dtype());
  if (nbytes == 0) return;
  void* d = dst.data_ptr();
  const void* s = src.data_ptr();
  const Device dd = dst.device(), sd = src.device();
  if (dd.is_cuda() && sd.is_cpu()) {
    // A replay would copy from the same host address again, long after the source changed.
    ignis::detail::refuse_during_capture(kOp, "copies from host memory");
    require_device(dd.index, kOp);
    DeviceGuard guard(dd.index);
    cudaStream_t stream = current_cuda_stream(dd.index);
    IGNIS_CUDA_CHECK(cudaMemcpyAsync(d, s, nbytes, cudaMemcpyHostToDevice, stream), kOp);
    if (src.is_pinned()) {
      record_storage_stream(src.impl()->storage->data, sd, true, stream);
      if (!non_blocking) IGNIS_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
    }
    return;
  }
  if (dd.is_cpu() && sd.is_cuda()) {
    ignis::detail::refuse_during_capture(
        kOp, "copies to the host and waits for it (item(), printing, .cpu())");
    require_device(sd.index, kOp);
    DeviceGuard guard(sd.index);
    cudaStream_t stream = current_cuda_stream(sd.index);
    IGNIS_CUDA_CHECK(cudaMemcpyAsync(d, s, nbytes, cudaMemcpyDeviceToHost, stream), kOp);
    if (non_blocking && dst.is_pinned()) {
      record_storage_stream(dst.impl()->storage->data, dd, true, stream);
    } else {
      IGNIS_CUDA_CHECK(cudaStreamSynchronize(stream), kOp);
      raise_kernel_errors(sd.index);  // a synchronisation: the device's reports are final
    }
    return;
  }
  // Two devices (the same device never comes here: copy_kernel handles it). Not inside a
  // capture: the destination would come from the other device's general pool (only the
  // capturing device routes to the graph's pool), and the events would pull that device's
  // shared compute stream into the capture.
  ignis::detail::refuse_during_capture(kOp, "copies between two GPUs");
  require_device(sd.index, kOp);
  require_device(dd.index, kOp);
  cudaStream_t src_stream = current_cuda_stream(sd.index);
  cudaStream_t dst_stream = current_cuda_stream(dd.index);
  event_wait(src_stream, sd.index, dst_stream);
  {
    DeviceGuard guard(dd.index);
    IGNIS_CUDA_CHECK(cudaMemcpyPeerAsync(d, dd.index, s, sd.index, nbytes, dst_stream), kOp);
  }
  try {
    event_wait(dst_stream, dd.index, src_stream);
  } catch (...) {
    // The source's stream cannot be made to wait for the copy, so its memory could be reused
    // while the copy still reads it: the host waits for the copy instead.
    DeviceGuard guard(dd.index);
    cudaStreamSynchronize(dst_stream);  // its own error, if any, is the device's, reported next
    throw;
  }
}
}  // namespace

void register_transfer() { ignis::detail::transfer_kernel.set(DeviceType::CUDA, &transfer); }

}  // namespace ignis::cuda::detail
