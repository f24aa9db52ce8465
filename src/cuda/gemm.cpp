// Matrix products on CUDA devices through cuBLASLt: the gemm_kernel slot (GemmArgs, see
// src/ops/linalg_kernels.h) for float32, float64, float16 and bfloat16, and the same product
// with a bias added in cuBLASLt's epilogue (gemm_with_epilogue, src/cuda/gemm.h).
//
// Note [cuBLASLt operand layouts]
// cuBLASLt is column-major and Ignis row-major, so Ignis's C = A B is computed as
// C^T = B^T A^T: C's memory read column-major is C^T (n x m, ld = C's row stride). An operand
// whose column stride is 1 is, read column-major, its own transpose (op N); one whose row
// stride is 1 (a transposed view) is itself (op T). The stride along a dimension of size 1
// never matters. Any other layout (a strided slice, rows repeated by stride 0) is first
// packed into a contiguous buffer by the CUDA copy kernel. The last batch dimension becomes
// cuBLASLt's strided batch; outer batch dimensions (rare: coalesce_batch merges what it can)
// are looped over here.
//
// float32 uses full float32 arithmetic unless set_allow_tf32(true) (CUBLAS_COMPUTE_32F vs
// 32F_FAST_TF32); 16-bit types accumulate in float32; float64 in float64.
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor_impl.h"
#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/gemm.h"
#include "ignis/cuda.h"
#include "ignis/ops.h"
#include "ops/linalg_kernels.h"

namespace ignis::cuda::detail {
namespace {
using ignis::detail::ElementwisePlan;
using ignis::detail::GemmArgs;
using ignis::detail::GemmMatrix;
constexpr const char* kOp = "matmul";
constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // what cuBLASLt may use on Hopper

cublasLtHandle_t handle_for(int device) {
  static std::vector<std::once_flag> once(static_cast<size_t>(device_count()));
  static std::vector<cublasLtHandle_t> handles(static_cast<size_t>(device_count()));
  std::call_once(once[size_t(device)], [&] {
    DeviceGuard guard(device);
    IGNIS_CUBLAS_CHECK(cublasLtCreate(&handles[size_t(device)]), kOp);
  });
  return handles[size_t(device)];
}

struct Layout {
  cublasLtMatrixLayout_t d = nullptr;
  ~Layout() {
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};
struct MatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~MatmulDesc() {
    if (d) cublasLtMatmulDescDestroy(d);
  }
};
struct Preference {
  cublasLtMatmulPreference_t d = nullptr;
  ~Preference() {
    if (d) cublasLtMatmulPreferenceDestroy(d);
  }
};

/// One operand as cuBLASLt reads it: the stored column-major matrix and its op.
struct Operand {
  char* data = nullptr;
  Shape batch_strides;  // in elements
  bool trans = false;
  uint64_t rows = 0, cols = 0;  // of the stored column-major matrix
  int64_t ld = 1;
  Tensor packed;  // keeps a packed copy alive
};

/// A contiguous copy of a strided batched matrix (rows x cols) on the device.
Tensor pack(const GemmArgs& g, const GemmMatrix& x, int64_t rows, int64_t cols) {
  Shape sizes = g.batch_sizes;
  sizes.push_back(rows);
  sizes.push_back(cols);
  Tensor out = empty(sizes, TensorOptions(g.dtype, g.device));
  Shape src_strides = x.batch_strides;
  src_strides.push_back(x.row_stride);
  src_strides.push_back(x.col_stride);
  // The plan over [out, x]: the CUDA copy kernel reads any strides, stride 0 included.
  ElementwisePlan p;
  p.noperands = 2;
  p.device = g.device;
  p.numel = out.numel();
  p.data[0] = static_cast<char*>(out.data_ptr());
  p.data[1] = static_cast<char*>(x.data);
  p.dtypes[0] = p.dtypes[1] = g.dtype;
  int64_t src_span = 0;  // the source's farthest element: the sum over its dims
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    IGNIS_CHECK(p.ndim < ignis::detail::kMaxPlanDims, ShapeError,
                "[{}] too many batch dimensions", kOp);
    p.sizes[p.ndim] = sizes[d];
    p.strides[0][p.ndim] = out.strides()[d];
    p.strides[1][p.ndim] = src_strides[d];
    src_span += (sizes[d] - 1) * std::abs(src_strides[d]);
    ++p.ndim;
  }
  p.fits_int32 = std::max<int64_t>(p.numel, src_span + 1) < (int64_t(1) << 31);
  ignis::detail::copy_kernel.get(g.device)(p);
  return out;
}

/// How the Ignis matrix x (rows x cols, row-major indexing) is handed to cuBLASLt, reading
/// its memory column-major (Note [cuBLASLt operand layouts]).
Operand operand(const GemmArgs& g, const GemmMatrix& x, int64_t rows, int64_t cols) {
  Operand o;
  o.data = static_cast<char*>(x.data);
  o.batch_strides = x.batch_strides;
  const int64_t rs = x.row_stride, cs = x.col_stride;
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cols)) {
    o.trans = false;  // column-major it is x^T: cols x rows
    o.rows = uint64_t(cols), o.cols = uint64_t(rows);
    o.ld = rows == 1 ? cols : rs;
  } else if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rows)) {
    o.trans = true;  // column-major it is x itself: rows x cols
    o.rows = uint64_t(rows), o.cols = uint64_t(cols);
    o.ld = cols == 1 ? rows : cs;
  } else {
    o.packed = pack(g, x, rows, cols);
    o.data = static_cast<char*>(o.packed.data_ptr());
    o.batch_strides = Shape(o.packed.strides().begin(), o.packed.strides().end() - 2);
    o.trans = false;
    o.rows = uint64_t(cols), o.cols = uint64_t(rows);
    o.ld = cols;
  }
  o.ld = std::max<int64_t>(o.ld, int64_t(o.rows));
  return o;
}

/// Largest power of two up to 256 (cuBLASLt's default assumption) dividing every address the
/// operand is read at: telling it less than the truth excludes the algorithms that need more.
uint32_t alignment(const char* base, const Shape& batch_strides, size_t item) {
  uint64_t bits = reinterpret_cast<uintptr_t>(base);
  for (int64_t s : batch_strides) bits |= uint64_t(s) * item;
  uint32_t a = 256;
  while (a > 1 && (bits % a) != 0) a /= 2;
  return a;
}

void make_layout(Layout& l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld,
                 int32_t batch, int64_t batch_stride) {
  IGNIS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l.d, type, rows, cols, ld), kOp);
  if (batch > 1) {
    IGNIS_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l.d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                        &batch, sizeof(batch)),
                       kOp);
    IGNIS_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l.d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                         &batch_stride, sizeof(batch_stride)),
        kOp);
  }
}

}  // namespace

bool gemm_with_epilogue(const GemmArgs& g, const GemmEpilogue& e) {
  cudaDataType type;
  cublasComputeType_t compute;
  cudaDataType scale = CUDA_R_32F;
  switch (g.dtype) {
    case kFloat32:
      type = CUDA_R_32F;
      compute = allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case kFloat64:
      type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F, scale = CUDA_R_64F;
      break;
    case kFloat16: type = CUDA_R_16F, compute = CUBLAS_COMPUTE_32F; break;
    case kBFloat16: type = CUDA_R_16BF, compute = CUBLAS_COMPUTE_32F; break;
    default:
      throw NotImplementedError(fmt::format(
          "[{}] {} matrix products are not implemented for cuda (cuBLASLt has no such GEMM); "
          "convert to a floating dtype",
          kOp, dtype_name(g.dtype)));
  }
  const int device = g.device.index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const size_t item = itemsize(g.dtype);
  // C^T (n x m) = B' A' with B' and A' as cuBLASLt reads B and A.
  Operand b = operand(g, g.b, g.k, g.n);
  Operand a = operand(g, g.a, g.m, g.k);
  char* c = static_cast<char*>(g.c.data);
  const int64_t ldc = std::max<int64_t>(g.c.row_stride, g.n);

  const size_t nb = g.batch_sizes.size();
  const int32_t batch = nb ? int32_t(g.batch_sizes.back()) : 1;
  IGNIS_CHECK(!nb || g.batch_sizes.back() <= INT32_MAX, ValueError,
              "[{}] batch of {} matrices is too large for cuBLASLt", kOp, g.batch_sizes.back());
  const auto last = [&](const Shape& s) { return nb ? s.back() : int64_t(0); };

  MatmulDesc desc;
  IGNIS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc.d, compute, scale), kOp);
  const cublasOperation_t opb = b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opa = a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  IGNIS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &opb,
                                                    sizeof(opb)),
                     kOp);
  IGNIS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &opa,
                                                    sizeof(opa)),
                     kOp);
  if (e.bias) {
    // A bias per column of C is one per row of cuBLASLt's D (C^T), its packed bias vector.
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    IGNIS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                      &epilogue, sizeof(epilogue)),
                       kOp);
    IGNIS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                      &e.bias, sizeof(e.bias)),
                       kOp);
  }
  Layout lb, la, lc;
  make_layout(lb, type, b.rows, b.cols, b.ld, batch, last(b.batch_strides));
  make_layout(la, type, a.rows, a.cols, a.ld, batch, last(a.batch_strides));
  make_layout(lc, type, uint64_t(g.n), uint64_t(g.m), ldc, batch, last(g.c.batch_strides));

  Preference pref;
  IGNIS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.d), kOp);
  const uint64_t ws_bytes = kWorkspaceBytes;
  IGNIS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
                         pref.d, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                         sizeof(ws_bytes)),
                     kOp);
  const uint32_t align_b = alignment(b.data, b.batch_strides, item);
  const uint32_t align_a = alignment(a.data, a.batch_strides, item);
  const uint32_t align_c = alignment(c, g.c.batch_strides, item);
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}};
  for (const auto& [attr, value] : aligns)
    IGNIS_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref.d, attr, &value, sizeof(value)), kOp);

  cublasLtHandle_t h = handle_for(device);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(
      h, desc.d, lb.d, la.d, lc.d, lc.d, pref.d, 1, &result, &found);
  // No algorithm is reported as NOT_SUPPORTED or as none found, depending on the version.
  if (heuristic == CUBLAS_STATUS_NOT_SUPPORTED)
    found = 0;
  else
    IGNIS_CUBLAS_CHECK(heuristic, kOp);
  if (found == 0 && e.bias) return false;  // the caller adds the bias itself
  IGNIS_CHECK(found > 0, NotImplementedError,
              "[{}] cuBLASLt found no algorithm for a {} product of [{}, {}] x [{}, {}]", kOp,
              dtype_name(g.dtype), g.m, g.k, g.k, g.n);
  // Workspace from the caching allocator, on this stream (freed after the launches: safe).
  Tensor workspace = empty({int64_t(result.workspaceSize)}, TensorOptions(kUInt8, g.device));

  const double alpha_d = g.alpha.to_double(), beta_d = g.beta.to_double();
  const float alpha_f = float(alpha_d), beta_f = float(beta_d);
  const void* alpha = scale == CUDA_R_64F ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = scale == CUDA_R_64F ? static_cast<const void*>(&beta_d) : &beta_f;

  // Outer batch dims (all but the last): one cuBLASLt call per index.
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < nb; ++d) outer *= g.batch_sizes[d];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t rem = o, off_a = 0, off_b = 0, off_c = 0;
    // The outer dims, last first; none without batch dims (nb - 1 would wrap around).
    for (size_t d = nb > 0 ? nb - 1 : 0; d-- > 0;) {
      const int64_t i = rem % g.batch_sizes[d];
      rem /= g.batch_sizes[d];
      off_a += i * a.batch_strides[d];
      off_b += i * b.batch_strides[d];
      off_c += i * g.c.batch_strides[d];
    }
    char* cp = c + off_c * int64_t(item);
    IGNIS_CUBLAS_CHECK(
        cublasLtMatmul(h, desc.d, alpha, b.data + off_b * int64_t(item), lb.d,
                       a.data + off_a * int64_t(item), la.d, beta, cp, lc.d, cp, lc.d,
                       &result.algo, workspace.numel() ? workspace.data_ptr() : nullptr,
                       size_t(workspace.numel()), stream),
        kOp);
  }
  return true;
}

namespace {
void gemm(const GemmArgs& g) { gemm_with_epilogue(g, {}); }
}  // namespace

void register_gemm() { ignis::detail::gemm_kernel.set(DeviceType::CUDA, &gemm); }

}  // namespace ignis::cuda::detail
