// 2-D convolution on the GPU through cuDNN 9's convolution API (cudnn_cnn.h; the legacy API
// cuDNN 9 still ships, chosen over the graph/backend API for its far smaller surface): the
// three slots of src/ops/nn_kernels.h (forward with bias, data gradient, weight and bias
// gradients), NCHW or channels-last tensors described by their strides, groups and dilation.
//
// - One cuDNN handle per device and thread (handles are not thread-safe), bound to the
//   thread's current stream before each call.
// - The algorithm for a shape (sizes, strides, dtype, parameters) is chosen once, by cuDNN's
//   heuristics or, with cuda::set_cudnn_benchmark(true), by timing the candidates on the
//   call's own tensors (cudnnFind*AlgorithmEx), and cached; the workspace comes from the device
//   caching allocator, so it is reused like any other block and ordered on the stream.
// - float32 runs in full precision (CUDNN_FMA_MATH) unless cuda::set_allow_tf32(true), as
//   the matrix products do; float64 in float64; bf16 and fp16 in their own precision on
//   tensor cores, accumulating in float32 (the bias add and bias gradient go through the
//   elementwise and reduction kernels, also in float32, rounded once).
// - cuDNN pads symmetrically. The front end's padding_end may differ from padding ("same"
//   with an even kernel; a transposed convolution's output_padding); such a convolution runs
//   on the input extended with zero rows at the end, its output cut, and its gradient
//   extended with zeros to the size the symmetric convolution produces.
// Built without cuDNN (IGNIS_HAVE_CUDNN unset), the slots say so instead.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/graph_capture.h"
#include "core/shape.h"
#include "core/tensor_impl.h"
#include "cuda/context.h"
#include "ignis/cuda.h"
#include "ignis/ignis.h"
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

#ifdef IGNIS_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace ignis::cuda {
namespace {
std::atomic<bool> g_cudnn_benchmark{false};
std::atomic<bool> g_cudnn_deterministic{false};
}  // namespace
void set_cudnn_benchmark(bool on) { g_cudnn_benchmark = on; }
bool cudnn_benchmark() { return g_cudnn_benchmark; }
void set_cudnn_deterministic(bool on) { g_cudnn_deterministic = on; }
bool cudnn_deterministic() { return g_cudnn_deterministic; }
}  // namespace ignis::cuda

namespace ignis::cuda::detail {
using ignis::detail::Conv2dParams;

#ifdef IGNIS_HAVE_CUDNN
namespace {

[[noreturn]] void throw_cudnn_error(
    cudnnStatus_t s, const char* call, const char* op, const char* file, int line) {
  const std::string msg =
      fmt::format("[{}] {} failed: {} ({}:{})", op, call, cudnnGetErrorString(s), file, line);
  // ALLOC_FAILED is cuDNN 9's name for a failed host allocation; its own device allocations
  // fail with DEVICE_ALLOCATION_FAILED. Either is memory, which may come back.
  if (s == CUDNN_STATUS_ALLOC_FAILED || s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    throw OutOfMemoryError(msg);
  throw Error(msg);
}
#define IGNIS_CUDNN_CHECK(call, op)                                \
  do {                                                             \
    const cudnnStatus_t status_ = (call);                          \
    if (status_ != CUDNN_STATUS_SUCCESS)                           \
      throw_cudnn_error(status_, #call, (op), __FILE__, __LINE__); \
  } while (0)

/// This thread's handle for device, bound to the device's current stream.
cudnnHandle_t handle_for(int device, const char* op) {
  thread_local std::map<int, cudnnHandle_t> handles;  // never destroyed: the driver may be
                                                      // gone at thread exit
  auto it = handles.find(device);
  if (it == handles.end()) {
    cudnnHandle_t h = nullptr;
    IGNIS_CUDNN_CHECK(cudnnCreate(&h), op);
    it = handles.emplace(device, h).first;
  }
  IGNIS_CUDNN_CHECK(cudnnSetStream(it->second, current_cuda_stream(device)), op);
  return it->second;
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    case DType::Float16: return CUDNN_DATA_HALF;
    default: return CUDNN_DATA_FLOAT;
  }
}

/// What cuDNN accumulates in: float64 for float64, float32 otherwise (16-bit data included).
cudnnDataType_t compute_type(DType t) {
  return t == kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
}

bool is_16bit(DType t) { return t == kBFloat16 || t == kFloat16; }

/// A descriptor dimension as cuDNN's int; larger sizes and strides are refused, not truncated.
int desc_int(int64_t v, const char* op) {
  IGNIS_CHECK(
      v <= std::numeric_limits<int>::max(),
      NotImplementedError,
      "[{}] a size or stride of {} does not fit cuDNN's 32-bit descriptors",
      op,
      v);
  return int(v);
}

/// t's strides with each size-1 dim's stride set to what a packed tensor in the call's layout
/// (NHWC or NCHW) would have there. Such a stride addresses nothing, but cuDNN reads the layout
/// from the strides: a [N, 1, H, W] tensor is both NCHW and NHWC, and its C stride must agree
/// with the layout of the call's other operands.
std::array<int64_t, 4> descriptor_strides(const Tensor& t, bool nhwc) {
  std::array<int64_t, 4> st{t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
  const std::array<int, 4> inner_first =
      nhwc ? std::array<int, 4>{1, 3, 2, 0} : std::array<int, 4>{3, 2, 1, 0};
  int64_t packed = 1;
  for (int d : inner_first) {
    if (t.size(d) == 1)
      st[d] = packed;
    else
      packed *= t.size(d);
  }
  return st;
}

/// Owning wrappers of the three descriptor kinds.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  /// t [N, C, H, W] with strides; nhwc: the layout of the call it takes part in.
  TensorDesc(const Tensor& t, bool nhwc, const char* op) {
    // cuDNN's legacy descriptors address at most 2^31 elements per tensor.
    int64_t span = 1;
    for (int i = 0; i < 4; ++i) span += (t.size(i) - 1) * std::abs(t.stride(i));
    IGNIS_CHECK(
        t.numel() == 0 || span <= std::numeric_limits<int>::max(),
        NotImplementedError,
        "[{}] a tensor of shape {} spans {} elements, beyond cuDNN's limit of 2^31 - 1; use a "
        "smaller batch",
        op,
        ignis::detail::shape_str(t.sizes()),
        span);
    const std::array<int64_t, 4> st = descriptor_strides(t, nhwc);
    std::array<int, 8> v{};  // sizes, then strides: checked before anything is created
    for (int i = 0; i < 4; ++i) {
      v[i] = desc_int(t.size(i), op);
      v[4 + i] = desc_int(st[i], op);
    }
    IGNIS_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d), op);
    const cudnnStatus_t set = cudnnSetTensor4dDescriptorEx(
        d, data_type(t.dtype()), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    if (set != CUDNN_STATUS_SUCCESS) cudnnDestroyTensorDescriptor(d);  // not leaked on throw
    IGNIS_CUDNN_CHECK(set, op);
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  /// w's logical dims [O, C / groups, kH, kW]; its memory in NCHW or NHWC order.
  FilterDesc(const Tensor& w, bool nhwc, const char* op) {
    std::array<int, 4> v{};
    for (int i = 0; i < 4; ++i) v[i] = desc_int(w.size(i), op);
    IGNIS_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d), op);
    const cudnnStatus_t set = cudnnSetFilter4dDescriptor(
        d, data_type(w.dtype()), nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, v[0], v[1], v[2],
        v[3]);
    if (set != CUDNN_STATUS_SUCCESS) cudnnDestroyFilterDescriptor(d);  // not leaked on throw
    IGNIS_CUDNN_CHECK(set, op);
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};

struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc(const Conv2dParams& p, DType t, const char* op) {
    IGNIS_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d), op);
    try {
      configure(p, t, op);
    } catch (...) {  // the destructor does not run for a constructor that throws
      cudnnDestroyConvolutionDescriptor(d);
      throw;
    }
  }
  void configure(const Conv2dParams& p, DType t, const char* op) {
    IGNIS_CUDNN_CHECK(
        cudnnSetConvolution2dDescriptor(
            d,
            int(p.padding[0]),
            int(p.padding[1]),
            int(p.stride[0]),
            int(p.stride[1]),
            int(p.dilation[0]),
            int(p.dilation[1]),
            CUDNN_CROSS_CORRELATION,
            compute_type(t)),
        op);
    IGNIS_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, int(p.groups)), op);
    // FMA_MATH keeps float32 off TF32 tensor cores; bf16/fp16 run on tensor cores with float
    // accumulation (the compute type above); float64 has no reduced-precision mode.
    const cudnnMathType_t math = t == kFloat32 && !allow_tf32() ? CUDNN_FMA_MATH
                                 : is_16bit(t)                  ? CUDNN_TENSOR_OP_MATH
                                                                : CUDNN_DEFAULT_MATH;
    IGNIS_CUDNN_CHECK(cudnnSetConvolutionMathType(d, math), op);
  }
  /// The math type the chosen algorithm was reported with; float32 never takes TF32 while
  /// TF32 is off, whatever the report.
  void use(cudnnMathType_t math, DType t, const char* op) {
    if (t == kFloat32 && !allow_tf32()) math = CUDNN_FMA_MATH;
    IGNIS_CUDNN_CHECK(cudnnSetConvolutionMathType(d, math), op);
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

/// Whether a convolution call over x and y runs in NHWC: either operand channels-last (a
/// tensor with 1x1 planes reads as NCHW, so one operand alone can miss it).
bool nhwc_call(const Tensor& x, const Tensor& y) {
  return ignis::detail::is_channels_last(x) || ignis::detail::is_channels_last(y);
}

/// The three descriptors of one convolution: x [N, C, H, W], w, y [N, O, Ho, Wo]. The call is
/// NHWC when either activation is channels-last (the front end gives both the same layout;
/// one of them may have C = 1 and so also be NCHW-contiguous), and the filter is described
/// in that layout: cuDNN picks its NHWC kernels only for an NHWC filter.
struct Descs {
  bool nhwc;
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  Descs(const Tensor& xt, const Tensor& wt, const Tensor& yt, const Conv2dParams& p, const char* op)
      : nhwc(nhwc_call(xt, yt)),
        x(xt, nhwc, op),
        y(yt, nhwc, op),
        w(wt, nhwc, op),
        conv(p, xt.dtype(), op) {}
};

/// The weight's memory in the filter layout of d: a view when the weight is already laid out
/// so (a channels-last weight for an NHWC call, from Module::to(channels_last)), else a copy.
Tensor filter_memory(const Tensor& w, const Descs& d) {
  return d.nhwc ? w.permute({0, 2, 3, 1}).contiguous() : w.contiguous();
}

/// Where cuDNN writes the weight gradient for gw: gw's own memory when its layout is d's,
/// else a buffer in d's filter layout (copied into gw by store_filter_grad).
Tensor filter_grad_memory(const Tensor& gw, const Descs& d) {
  if (d.nhwc) {
    const Tensor as_nhwc = gw.permute({0, 2, 3, 1});
    return as_nhwc.is_contiguous()
               ? as_nhwc
               : ignis::detail::make_tensor(as_nhwc.sizes(), gw.dtype(), gw.device());
  }
  return gw.is_contiguous() ? gw : ignis::detail::make_tensor(gw.sizes(), gw.dtype(), gw.device());
}
void store_filter_grad(const Tensor& gw, const Tensor& memory, const Descs& d) {
  if (memory.is_same_storage(gw)) return;
  Tensor(gw).copy_(d.nhwc ? memory.permute({0, 3, 1, 2}) : memory);
}

enum class Pass : int { Forward, Data, Filter };

/// Benchmark mode times every algorithm (cudnnFind*), which a CUDA graph capture cannot
/// contain: a shape first met inside a capture takes cuDNN's heuristics instead.
bool benchmark_now() { return cudnn_benchmark() && !ignis::detail::capture_underway(); }

/// The largest power of two up to 256 that divides the operand's address: cuDNN may refuse
/// an algorithm for alignment alone, so calls on differently aligned views (a storage offset)
/// keep lists of their own rather than pruning the aligned calls' best algorithms. Each
/// operand's own: x 16-aligned with y 2-aligned is another problem than the other way round.
int64_t alignment_of(const Tensor& t) {
  const uintptr_t bits = uintptr_t(256) | reinterpret_cast<uintptr_t>(t.data_ptr());
  return int64_t(bits & (~bits + 1));
}

/// What decides an algorithm: the pass, the device, dtype, math mode, the benchmark and
/// deterministic settings, sizes and strides, and the operands' alignment.
using AlgoKey = std::vector<int64_t>;
constexpr size_t kBenchmarkSlot = 4;  // key_of's benchmark setting
AlgoKey key_of(
    Pass pass,
    int device,
    const Tensor& x,
    const Tensor& w,
    const Tensor& y,
    const Conv2dParams& p) {
  AlgoKey k{
      int64_t(pass),
      device,
      int64_t(x.dtype()),
      int64_t(allow_tf32()),
      int64_t(cudnn_benchmark()),
      int64_t(cudnn_deterministic()),
      alignment_of(x),
      alignment_of(w),
      alignment_of(y)};
  for (const Tensor* t : {&x, &w, &y})
    for (int d = 0; d < 4; ++d) k.push_back(t->size(d)), k.push_back(t->stride(d));
  for (int i = 0; i < 2; ++i) k.insert(k.end(), {p.stride[i], p.padding[i], p.dilation[i]});
  k.push_back(p.groups);
  return k;
}

/// An algorithm with the math type cuDNN reported for it: since cuDNN 7.4 the two together
/// choose the kernel, so the descriptor gets the math type before the workspace query and
/// the call (as PyTorch does).
struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

/// The algorithms cuDNN lists as supported for key, best first, found once (by its
/// heuristics, or timed in benchmark mode); run_first_that_works drops those that fail. Lists
/// are shared, never changed in place: a convolution pass takes a reference, not a copy.
using AlgoList = std::shared_ptr<const std::vector<AlgoChoice>>;
struct AlgoCache {
  std::mutex mu;
  std::map<AlgoKey, AlgoList> lists;
};
AlgoCache& algo_cache() {
  static AlgoCache cache;
  return cache;
}

template <class Find>
AlgoList cached_algos(const AlgoKey& key, const Find& find) {
  AlgoCache& c = algo_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (auto it = c.lists.find(key); it != c.lists.end()) return it->second;
  }
  AlgoList found = std::make_shared<const std::vector<AlgoChoice>>(find());
  std::lock_guard<std::mutex> lock(c.mu);
  return c.lists.emplace(key, std::move(found)).first->second;
}

/// The entries cuDNN marks as runnable (and, in deterministic mode, deterministic), in order.
template <class Perf>
std::vector<AlgoChoice> supported(const Perf* perf, int count, const char* op) {
  const bool deterministic = cudnn_deterministic();
  std::vector<AlgoChoice> out;
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        (!deterministic || perf[i].determinism == CUDNN_DETERMINISTIC))
      out.push_back({int(perf[i].algo), perf[i].mathType});
  IGNIS_CHECK(!out.empty(), NotImplementedError,
              "[{}] cuDNN offers no {}algorithm for this convolution{}", op,
              deterministic ? "deterministic " : "",
              deterministic ? " (cuda::set_cudnn_deterministic(false) allows the others)" : "");
  return out;
}

/// The key to look up: in a capture in benchmark mode, a shape its warm-up timed keeps that
/// list (so the capture runs the warm-up's algorithm); one first met there gets the
/// heuristics' list, under the key of the same call without benchmark mode, so the next eager
/// call still times its own.
AlgoKey usable_key(AlgoKey key) {
  if (!cudnn_benchmark() || !ignis::detail::capture_underway()) return key;
  AlgoCache& c = algo_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.lists.contains(key)) key[kBenchmarkSlot] = 0;
  return key;
}

/// An algorithm cuDNN will not run for these operands: unsupported, or refused for the
/// operands' alignment (reported as a bad parameter, not as unsupported).
bool refused(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED ||
         status == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
}

/// Runs attempt(choice) (set the math type, size the workspace, call cuDNN: the status) for
/// the candidates in order until one succeeds. A listed algorithm can still be refused for
/// these operands (a 16-bit case the legacy API covers thinly), as PyTorch also finds; those
/// are dropped from the cached list, so the next call starts with the one that ran. One whose
/// workspace does not fit in memory now is skipped but kept (memory comes back); if nothing
/// ran, that OutOfMemoryError is rethrown. Any other error, or every candidate refused, throws.
template <class Attempt>
void run_first_that_works(const AlgoKey& key, const std::vector<AlgoChoice>& candidates,
                          const Attempt& attempt, const char* op) {
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
  std::exception_ptr out_of_memory;
  std::vector<AlgoChoice> kept;  // the candidates not refused, in order
  for (size_t i = 0; i < candidates.size(); ++i) {
    try {
      status = attempt(candidates[i]);
    } catch (const OutOfMemoryError&) {
      out_of_memory = std::current_exception();
      kept.push_back(candidates[i]);
      continue;
    }
    if (status == CUDNN_STATUS_SUCCESS) {
      if (kept.size() < i) {  // some were refused: drop them from the cached list
        kept.insert(kept.end(), candidates.begin() + std::ptrdiff_t(i), candidates.end());
        AlgoCache& c = algo_cache();
        std::lock_guard<std::mutex> lock(c.mu);
        c.lists[key] = std::make_shared<const std::vector<AlgoChoice>>(std::move(kept));
      }
      return;
    }
    if (!refused(status)) break;
  }
  if (out_of_memory && refused(status)) std::rethrow_exception(out_of_memory);
  IGNIS_CUDNN_CHECK(status, op);
}

/// A workspace of `bytes` from the caching allocator (an empty tensor for none).
Tensor workspace(size_t bytes, Device device) {
  return ignis::detail::make_tensor({int64_t(bytes)}, kUInt8, device);
}

/// Benchmark mode's workspace: the most any supported algorithm of the heuristics' list asks,
/// capped (an algorithm wanting more is timed as failed, so not chosen).
constexpr size_t kMaxBenchmarkWorkspace = size_t(512) << 20;
template <class Perf>
size_t benchmark_workspace(const Perf* perf, int count) {
  size_t most = 0;
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) most = std::max(most, perf[i].memory);
  return std::min(most, kMaxBenchmarkWorkspace);
}
void* data_or_null(const Tensor& t) { return t.numel() > 0 ? t.data_ptr() : nullptr; }

/// alpha/beta scalars: double for double data, float otherwise.
struct Scale {
  double d;
  float f;
  const void* of(DType t) const { return t == kFloat64 ? static_cast<const void*>(&d) : &f; }
};
const Scale kOne{1.0, 1.0f}, kZero{0.0, 0.0f};

constexpr int kMaxAlgos = 16;

// What differs between the three passes is cuDNN's four calls for each, with the operands in
// its order: two read (a, b) and one written (out). Forward: x, w -> y. Data gradient:
// w, dy -> dx. Filter gradient: x, dy -> dw. Descs names them x, w and y in every pass.
struct ForwardCalls {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static cudnnStatus_t heuristics(cudnnHandle_t h, const Descs& d, int* n, Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(
        h, d.x.d, d.w.d, d.conv.d, d.y.d, kMaxAlgos, n, perf);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const Descs& d, const void* a, const void* b,
                            void* out, int* n, Perf* perf, void* ws, size_t bytes) {
    return cudnnFindConvolutionForwardAlgorithmEx(
        h, d.x.d, a, d.w.d, b, d.conv.d, d.y.d, out, kMaxAlgos, n, perf, ws, bytes);
  }
  static cudnnStatus_t workspace_size(cudnnHandle_t h, const Descs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(
        h, d.x.d, d.w.d, d.conv.d, d.y.d, cudnnConvolutionFwdAlgo_t(algo), bytes);
  }
  static cudnnStatus_t run(cudnnHandle_t h, const Descs& d, const void* alpha, const void* a,
                           const void* b, int algo, void* ws, size_t bytes, const void* beta,
                           void* out) {
    return cudnnConvolutionForward(h, alpha, d.x.d, a, d.w.d, b, d.conv.d,
                                   cudnnConvolutionFwdAlgo_t(algo), ws, bytes, beta, d.y.d, out);
  }
};

struct DataGradientCalls {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static cudnnStatus_t heuristics(cudnnHandle_t h, const Descs& d, int* n, Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, d.w.d, d.y.d, d.conv.d, d.x.d, kMaxAlgos, n, perf);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const Descs& d, const void* a, const void* b,
                            void* out, int* n, Perf* perf, void* ws, size_t bytes) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(
        h, d.w.d, a, d.y.d, b, d.conv.d, d.x.d, out, kMaxAlgos, n, perf, ws, bytes);
  }
  static cudnnStatus_t workspace_size(cudnnHandle_t h, const Descs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, d.w.d, d.y.d, d.conv.d, d.x.d, cudnnConvolutionBwdDataAlgo_t(algo), bytes);
  }
  static cudnnStatus_t run(cudnnHandle_t h, const Descs& d, const void* alpha, const void* a,
                           const void* b, int algo, void* ws, size_t bytes, const void* beta,
                           void* out) {
    return cudnnConvolutionBackwardData(h, alpha, d.w.d, a, d.y.d, b, d.conv.d,
                                        cudnnConvolutionBwdDataAlgo_t(algo), ws, bytes, beta,
                                        d.x.d, out);
  }
};

struct FilterGradientCalls {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static cudnnStatus_t heuristics(cudnnHandle_t h, const Descs& d, int* n, Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, d.x.d, d.y.d, d.conv.d, d.w.d, kMaxAlgos, n, perf);
  }
  static cudnnStatus_t find(cudnnHandle_t h, const Descs& d, const void* a, const void* b,
                            void* out, int* n, Perf* perf, void* ws, size_t bytes) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(
        h, d.x.d, a, d.y.d, b, d.conv.d, d.w.d, out, kMaxAlgos, n, perf, ws, bytes);
  }
  static cudnnStatus_t workspace_size(cudnnHandle_t h, const Descs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, d.x.d, d.y.d, d.conv.d, d.w.d, cudnnConvolutionBwdFilterAlgo_t(algo), bytes);
  }
  static cudnnStatus_t run(cudnnHandle_t h, const Descs& d, const void* alpha, const void* a,
                           const void* b, int algo, void* ws, size_t bytes, const void* beta,
                           void* out) {
    return cudnnConvolutionBackwardFilter(h, alpha, d.x.d, a, d.y.d, b, d.conv.d,
                                          cudnnConvolutionBwdFilterAlgo_t(algo), ws, bytes, beta,
                                          d.w.d, out);
  }
};

/// One pass through Calls: out = the pass over a and b (alpha 1, beta 0) with the algorithms
/// found once for key (cuDNN's heuristics, or timed in benchmark mode) and the first of them
/// that runs (run_first_that_works).
template <class Calls>
void convolve(cudnnHandle_t h, Descs& d, const AlgoKey& requested, DType dtype, Device device,
              const void* a, const void* b, void* out, const char* op) {
  const AlgoKey key = usable_key(requested);
  const AlgoList choices = cached_algos(key, [&] {
    typename Calls::Perf perf[kMaxAlgos];
    int n = 0;
    IGNIS_CUDNN_CHECK(Calls::heuristics(h, d, &n, perf), op);
    if (!benchmark_now()) return supported(perf, n, op);
    const size_t wsb = benchmark_workspace(perf, n);
    Tensor ws;
    try {
      ws = workspace(wsb, device);
    } catch (const OutOfMemoryError&) {
      return supported(perf, n, op);  // no room to time them: the heuristics' order
    }
    IGNIS_CUDNN_CHECK(Calls::find(h, d, a, b, out, &n, perf, data_or_null(ws), wsb), op);
    return supported(perf, n, op);  // sorted by time
  });
  run_first_that_works(key, *choices, [&](const AlgoChoice& c) {
    d.conv.use(c.math, dtype, op);
    size_t bytes = 0;
    const cudnnStatus_t sized = Calls::workspace_size(h, d, c.algo, &bytes);
    if (sized != CUDNN_STATUS_SUCCESS) return sized;
    Tensor ws = workspace(bytes, device);
    return Calls::run(h, d, kOne.of(dtype), a, b, c.algo, data_or_null(ws), bytes,
                      kZero.of(dtype), out);
  }, op);
}

void forward(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  const char* op = "conv2d";
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  cudnnHandle_t h = handle_for(dev, op);
  Descs d(x, w, y, p, op);
  const Tensor wm = filter_memory(w, d);
  convolve<ForwardCalls>(h, d, key_of(Pass::Forward, dev, x, w, y, p), x.dtype(), x.device(),
                         x.data_ptr(), wm.data_ptr(), y.data_ptr(), op);
}

void backward_data(const Tensor& gy, const Tensor& w, const Tensor& gx, const Conv2dParams& p) {
  const char* op = "conv2d_backward_input";
  const int dev = gx.device().index;
  DeviceGuard guard(dev);
  cudnnHandle_t h = handle_for(dev, op);
  Descs d(gx, w, gy, p, op);
  const Tensor wm = filter_memory(w, d);
  convolve<DataGradientCalls>(h, d, key_of(Pass::Data, dev, gx, w, gy, p), gx.dtype(),
                              gx.device(), wm.data_ptr(), gy.data_ptr(), gx.data_ptr(), op);
}

void backward_filter(
    const Tensor& gy, const Tensor& x, const Tensor& gw, const Tensor& gb, const Conv2dParams& p) {
  const char* op = "conv2d_backward_weight";
  const int dev = x.device().index;
  DeviceGuard guard(dev);
  cudnnHandle_t h = handle_for(dev, op);
  Descs d(x, gw, gy, p, op);
  const Tensor gw_memory = filter_grad_memory(gw, d);
  convolve<FilterGradientCalls>(h, d, key_of(Pass::Filter, dev, x, gw, gy, p), x.dtype(),
                                x.device(), x.data_ptr(), gy.data_ptr(), gw_memory.data_ptr(),
                                op);
  store_filter_grad(gw, gw_memory, d);
  if (!gb.defined()) return;
  // The bias gradient by the reduction kernels (16-bit summed in float32 and rounded once), not
  // cudnnConvolutionBackwardBias: deprecated in cuDNN 9, its channels-last and 16-bit cases
  // undocumented.
  Tensor(gb).copy_(is_16bit(gy.dtype()) ? gy.to(kFloat32).sum({0, 2, 3}) : gy.sum({0, 2, 3}));
}

void add_bias(const Tensor& bias, const Tensor& y) {
  const char* op = "conv2d";
  // cuDNN's bias add and bias gradient are not documented for bf16; the elementwise engine
  // adds in float and rounds once.
  if (is_16bit(y.dtype())) {
    Tensor(y).add_(bias.view({1, bias.size(0), 1, 1}));
    return;
  }
  const int dev = y.device().index;
  DeviceGuard guard(dev);
  cudnnHandle_t h = handle_for(dev, op);
  const Tensor b4 = bias.view({1, bias.size(0), 1, 1});
  const bool nhwc = ignis::detail::is_channels_last(y);
  TensorDesc bd(b4, nhwc, op), yd(y, nhwc, op);
  IGNIS_CUDNN_CHECK(
      cudnnAddTensor(
          h, kOne.of(y.dtype()), bd.d, bias.data_ptr(), kOne.of(y.dtype()), yd.d, y.data_ptr()),
      op);
}

// ---- asymmetric padding (see the header) ---------------------------------------------------

bool symmetric(const Conv2dParams& p) { return p.padding == p.padding_end; }

/// Rows / columns of zeros to append to the input so that symmetric padding covers padding_end.
std::array<int64_t, 2> input_extension(const Conv2dParams& p) {
  return {
      std::max<int64_t>(0, p.padding_end[0] - p.padding[0]),
      std::max<int64_t>(0, p.padding_end[1] - p.padding[1])};
}

/// t with `extra` zero rows (dim 2) and columns (dim 3) appended, in t's layout.
Tensor zero_extend(const Tensor& t, std::array<int64_t, 2> extra) {
  if (extra[0] == 0 && extra[1] == 0) return t;
  const bool cl = ignis::detail::is_channels_last(t);
  Tensor r = ignis::detail::empty_in_layout(
      {t.size(0), t.size(1), t.size(2) + extra[0], t.size(3) + extra[1]},
      t.dtype(),
      t.device(),
      cl);
  r.zero_();
  r.narrow(2, 0, t.size(2)).narrow(3, 0, t.size(3)).copy_(t);
  return r;
}

/// The output size of the symmetric convolution over an input of `in` rows.
int64_t symmetric_out(int64_t in, int64_t k, const Conv2dParams& p, int i) {
  return (in + 2 * p.padding[i] - p.dilation[i] * (k - 1) - 1) / p.stride[i] + 1;
}

/// The gradient of the output, extended with zeros to the symmetric convolution's size.
Tensor full_grad(const Tensor& gy, const Tensor& x_ext, const Tensor& w, const Conv2dParams& p) {
  return zero_extend(
      gy,
      {symmetric_out(x_ext.size(2), w.size(2), p, 0) - gy.size(2),
       symmetric_out(x_ext.size(3), w.size(3), p, 1) - gy.size(3)});
}

/// cuDNN's NHWC convolutions are float32 and 16-bit only: a float64 channels-last call runs
/// on NCHW copies.
bool needs_nchw(const Tensor& t) {
  return t.dtype() == kFloat64 && ignis::detail::is_channels_last(t);
}
Tensor nchw_buffer(const Tensor& like) {
  return ignis::detail::make_tensor(like.sizes(), like.dtype(), like.device());
}

void conv_forward(
    const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Conv2dParams& p) {
  if (needs_nchw(x) || needs_nchw(y)) {
    Tensor yc = nchw_buffer(y);
    conv_forward(x.contiguous(), w, b, yc, p);
    Tensor(y).copy_(yc);
    return;
  }
  if (symmetric(p)) {
    forward(x, w, y, p);
    if (b.defined()) add_bias(b, y);
    return;
  }
  const Tensor xe = zero_extend(x, input_extension(p));
  // The buffer takes the call's layout: y alone reads as NCHW when its planes are 1x1, and a
  // buffer grown from it beside a channels-last input would mix two layouts in one call.
  const bool cl = nhwc_call(xe, y);
  Tensor full = ignis::detail::empty_in_layout(
      {y.size(0),
       y.size(1),
       symmetric_out(xe.size(2), w.size(2), p, 0),
       symmetric_out(xe.size(3), w.size(3), p, 1)},
      y.dtype(),
      y.device(),
      cl);
  forward(xe, w, full, p);
  Tensor(y).copy_(full.narrow(2, 0, y.size(2)).narrow(3, 0, y.size(3)));
  if (b.defined()) add_bias(b, y);
}

void conv_backward_input(
    const Tensor& gy, const Tensor& w, const Tensor& gx, const Conv2dParams& p) {
  if (needs_nchw(gy) || needs_nchw(gx)) {
    Tensor gxc = nchw_buffer(gx);
    conv_backward_input(gy.contiguous(), w, gxc, p);
    Tensor(gx).copy_(gxc);
    return;
  }
  if (symmetric(p)) return backward_data(gy, w, gx, p);
  const auto extra = input_extension(p);
  const bool cl = nhwc_call(gx, gy);
  Tensor gxe = ignis::detail::empty_in_layout(
      {gx.size(0), gx.size(1), gx.size(2) + extra[0], gx.size(3) + extra[1]},
      gx.dtype(),
      gx.device(),
      cl);
  backward_data(full_grad(gy, gxe, w, p), w, gxe, p);
  Tensor(gx).copy_(gxe.narrow(2, 0, gx.size(2)).narrow(3, 0, gx.size(3)));
}

void conv_backward_weight(
    const Tensor& gy, const Tensor& x, const Tensor& gw, const Tensor& gb, const Conv2dParams& p) {
  if (needs_nchw(gy) || needs_nchw(x))
    return conv_backward_weight(gy.contiguous(), x.contiguous(), gw, gb, p);
  if (symmetric(p)) return backward_filter(gy, x, gw, gb, p);
  const Tensor xe = zero_extend(x, input_extension(p));
  backward_filter(full_grad(gy, xe, gw, p), xe, gw, gb, p);
}
}  // namespace

void register_conv() {
  ignis::detail::conv2d_forward_kernel.set(DeviceType::CUDA, &conv_forward);
  ignis::detail::conv2d_backward_input_kernel.set(DeviceType::CUDA, &conv_backward_input);
  ignis::detail::conv2d_backward_weight_kernel.set(DeviceType::CUDA, &conv_backward_weight);
}

#else  // !IGNIS_HAVE_CUDNN

namespace {
[[noreturn]] void no_cudnn(const char* op) {
  throw NotImplementedError(fmt::format(
      "[{}] convolutions on CUDA need cuDNN 9, and this build of Ignis has none (configure "
      "with -DIGNIS_CUDNN_ROOT=<cuDNN prefix>; see the configure summary)",
      op));
}
}  // namespace

void register_conv() {
  ignis::detail::conv2d_forward_kernel.set(
      DeviceType::CUDA,
      [](const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) {
        no_cudnn("conv2d");
      });
  ignis::detail::conv2d_backward_input_kernel.set(
      DeviceType::CUDA, [](const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) {
        no_cudnn("conv2d_backward_input");
      });
  ignis::detail::conv2d_backward_weight_kernel.set(
      DeviceType::CUDA,
      [](const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) {
        no_cudnn("conv2d_backward_weight");
      });
}
#endif

}  // namespace ignis::cuda::detail
