// Errors that a kernel finds in its inputs (the fused cross-entropy's out-of-range targets),
// reported without making the launching call wait for the GPU.
//
// Note [Deferred kernel errors]
// The kernel writes what it found into a small report in pinned, device-mapped host memory,
// and an event recorded after it says when the report is final. Reports are read, and a found
// error raised as an IndexError, by the next launch that takes a report once its event has
// passed, and by every synchronisation of the device (a copy to the host such as item(),
// cuda::synchronize, Stream::synchronize, Event::synchronize). So the error surfaces at the
// first such point after the bad call, as PyTorch's device-side asserts do, but leaves the
// device usable, and a training step keeps no host wait beyond the ones its caller asks for.
// Reports are per device, not per thread: the first thread that synchronises after a bad call
// (a loader or metrics thread calling .cpu(), say) is the one that receives its IndexError.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

namespace ignis::cuda::detail {

/// What a kernel found: index ~0 means nothing; otherwise the first bad position and the
/// value found there (the kernel's own meaning, for the message).
struct KernelReport {
  unsigned long long index;
  long long value;
};

/// Turns a found report into the exception's message.
using DescribeReport = std::function<std::string(const KernelReport&)>;

/// A report slot for one launch on `device` (its device pointer, reset to "nothing found"):
/// pass it to the kernel, then call watch_report once the kernels that write it are queued.
/// First raises (as IndexError) the first error of the device's earlier reports that are
/// final, so a bad call is reported at the latest by the next call that takes a report.
KernelReport* take_report(int device);
/// Gives back a report taken by take_report whose kernel was never launched (its launch
/// failed), so that the slot is not lost.
void release_report(int device, KernelReport* report);
/// Records the event after which `report` is final on `stream` (of `device`); describe makes
/// the message if it holds an error. Never call it during a CUDA graph capture.
void watch_report(int device, KernelReport* report, cudaStream_t stream, DescribeReport describe);
/// Raises the first error among the device's reports that are final (all of those on a
/// stream that was just synchronised). device < 0: every device.
void raise_kernel_errors(int device);

}  // namespace ignis::cuda::detail
