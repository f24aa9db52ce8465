// Kernel reports read after the fact (deferred_errors.h, Note [Deferred kernel errors]).
// Per device: one pinned, device-mapped block of report slots, the events that say when a
// slot's launch is done, and the reports still in flight in launch order.
#include "cuda/deferred_errors.h"

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/context.h"

namespace ignis::cuda::detail {
namespace {
constexpr const char* kOp = "kernel report";
// Reports in flight per device before a new one waits for the oldest: a host this far ahead
// of its GPU is waiting for it anyway.
constexpr size_t kSlots = 256;
constexpr unsigned long long kNothing = ~0ull;

struct Pending {
  size_t slot;
  cudaEvent_t done;
  DescribeReport describe;
};

struct DeviceReports {
  KernelReport* host = nullptr;    // kSlots reports, pinned
  KernelReport* device = nullptr;  // the same memory, as kernels address it
  std::vector<size_t> free_slots;
  std::vector<cudaEvent_t> free_events;
  std::deque<Pending> pending;
};

std::mutex g_mutex;
// Never freed: the pinned block and events live as long as the CUDA context (destroying them
// in static destructors would race the runtime's own shutdown).
std::vector<DeviceReports*> g_devices;

DeviceReports& reports_of(int device) {
  if (size_t(device) >= g_devices.size()) g_devices.resize(size_t(device) + 1, nullptr);
  DeviceReports*& r = g_devices[size_t(device)];
  if (!r) {
    auto fresh = std::make_unique<DeviceReports>();
    DeviceGuard guard(device);
    void* block = nullptr;
    IGNIS_CUDA_CHECK(cudaHostAlloc(&block, kSlots * sizeof(KernelReport),
                                   cudaHostAllocMapped | cudaHostAllocPortable),
                     kOp);
    fresh->host = static_cast<KernelReport*>(block);
    void* mapped = nullptr;
    IGNIS_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, block, 0), kOp);
    fresh->device = static_cast<KernelReport*>(mapped);
    for (size_t s = kSlots; s-- > 0;) fresh->free_slots.push_back(s);
    r = fresh.release();
  }
  return *r;
}

/// Retires the pending reports whose launches are done (all of them with wait_oldest only
/// for the oldest, which is waited for first); returns the first error's message.
std::optional<std::string> retire(DeviceReports& r, int device, bool wait_oldest) {
  if (r.pending.empty()) return std::nullopt;  // most calls: nothing to ask the device
  DeviceGuard guard(device);
  if (wait_oldest)
    IGNIS_CUDA_CHECK(cudaEventSynchronize(r.pending.front().done), kOp);
  std::optional<std::string> first;
  for (auto it = r.pending.begin(); it != r.pending.end();) {
    const cudaError_t state = cudaEventQuery(it->done);
    if (still_running(state)) {
      ++it;
      continue;
    }
    IGNIS_CUDA_CHECK(state, kOp);
    // Written by the GPU behind the compiler's back: read through volatile.
    const volatile KernelReport& written = r.host[it->slot];
    const KernelReport found{written.index, written.value};
    if (found.index != kNothing && !first) first = it->describe(found);
    r.free_slots.push_back(it->slot);
    r.free_events.push_back(it->done);
    it = r.pending.erase(it);
  }
  return first;
}
}  // namespace

KernelReport* take_report(int device) {
  std::optional<std::string> error;
  KernelReport* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    DeviceReports& r = reports_of(device);
    error = retire(r, device, /*wait_oldest=*/r.free_slots.empty());
    if (!error) {
      IGNIS_CHECK(!r.free_slots.empty(), Error,
                  "[{}] all {} report slots of cuda:{} are taken by launches never watched",
                  kOp, kSlots, device);
      const size_t s = r.free_slots.back();
      r.free_slots.pop_back();
      r.host[s].index = kNothing;  // nothing found, until the kernel says otherwise
      slot = r.device + s;
    }
  }
  if (error) throw IndexError(*error);
  return slot;
}

void release_report(int device, KernelReport* report) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceReports& r = reports_of(device);
  r.free_slots.push_back(size_t(report - r.device));
}

void watch_report(int device, KernelReport* report, cudaStream_t stream, DescribeReport describe) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceReports& r = reports_of(device);
  DeviceGuard guard(device);
  cudaEvent_t done = nullptr;
  if (!r.free_events.empty()) {
    done = r.free_events.back();
    r.free_events.pop_back();
  } else {
    IGNIS_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), kOp);
  }
  IGNIS_CUDA_CHECK(cudaEventRecord(done, stream), kOp);
  r.pending.push_back({size_t(report - r.device), done, std::move(describe)});
}

void raise_kernel_errors(int device) {
  std::optional<std::string> error;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (size_t d = 0; d < g_devices.size(); ++d) {
      if (!g_devices[d] || (device >= 0 && size_t(device) != d)) continue;
      auto found = retire(*g_devices[d], int(d), false);
      if (found && !error) error = std::move(found);
    }
  }
  if (error) throw IndexError(*error);
}

}  // namespace ignis::cuda::detail
