// The CPU GEMM behind every matrix product (gemm_kernel, src/ops/linalg_kernels.h):
// - float32/float64 go to OpenBLAS's CBLAS, reading operands in place whenever BLAS can
//   (Note [GEMM operand layouts]); single-row/column products use gemv/dot as PyTorch does;
//   float32 matrix-matrix products go to oneDNN's sgemm instead where OpenBLAS does not know
//   the CPU and runs kernels for narrower vectors than it has (Note [Choosing the sgemm
//   library], sgemm_library.cpp);
// - bfloat16 goes to oneDNN's bf16 matmul where Ignis is built with oneDNN and it has an
//   optimised kernel (src/cpu/dnnl_matmul.cpp); otherwise, and for float16 (no float16
//   matmul on CPUs without AVX512-FP16), the operands are converted to float32, multiplied
//   by sgemm and the result rounded back once (PyTorch's CPU kernels also accumulate these in
//   float);
// - int64/int32/uint8 use a plain i-k-j loop with wrap-around arithmetic, parallel over rows.
// Batches of small matrices run in parallel, one single-threaded GEMM per thread (OpenBLAS's
// OpenMP build runs on one thread when called inside a parallel region); a few large ones run
// one after another, each threaded by OpenBLAS itself (a small one stays on one thread: Note
// [Small products on one thread]).
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "core/allocator.h"
#include "core/parallel.h"
#if IGNIS_WITH_DNNL
#include <dnnl.h>

#include "cpu/dnnl_matmul.h"
#endif
#include "cpu/sgemm_library.h"
#include "kernels/convert.h"
#include "ops/linalg_kernels.h"

namespace ignis::cpu {
namespace {

using detail::GemmArgs;

constexpr int64_t kMaxBlasInt = std::numeric_limits<blasint>::max();
/// Below this many multiply-adds in total a batch is not worth splitting across threads.
constexpr double kMinParallelWork = 1 << 16;
/// Matrices with at least this many multiply-adds are threaded well by OpenBLAS itself.
constexpr double kLargeGemmWork = 1 << 21;

/// Temporary buffer of n elements from the caching CPU allocator: packed operands are
/// reused call after call, and fresh pages cost a fault each (Note [CPU allocator caches]).
template <class S>
class Scratch {
 public:
  explicit Scratch(int64_t n) : bytes_(size_t(std::max<int64_t>(n, 0)) * sizeof(S)) {
    if (bytes_) ptr_ = static_cast<S*>(detail::cpu_allocator().allocate(bytes_));
  }
  ~Scratch() {
    if (ptr_) detail::cpu_allocator().deallocate(ptr_, bytes_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  S* get() const { return ptr_; }

 private:
  size_t bytes_;
  S* ptr_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Batches: where matrix number `i` of the (coalesced) batch starts in each operand.

struct BatchOffsets {
  int64_t a = 0, b = 0, c = 0;
};

BatchOffsets batch_offsets(const GemmArgs& g, int64_t i) {
  BatchOffsets o;
  for (int64_t d = int64_t(g.batch_sizes.size()) - 1; d >= 0; --d) {
    const int64_t idx = i % g.batch_sizes[d];
    i /= g.batch_sizes[d];
    o.a += idx * g.a.batch_strides[d];
    o.b += idx * g.b.batch_strides[d];
    o.c += idx * g.c.batch_strides[d];
  }
  return o;
}

int64_t batch_count(const GemmArgs& g) {
  int64_t nb = 1;
  for (int64_t s : g.batch_sizes) nb *= s;
  return nb;
}

/// Calls f(offsets, scratch) for every matrix of the batch. `scratch_elems` elements of S are
/// reserved per concurrently running call (allocated here, outside any parallel region, so
/// nothing inside can throw). Many or small matrices are spread over threads; few large ones
/// run in order so that OpenBLAS can thread each.
template <class S, class F>
void for_each_matrix(const GemmArgs& g, int64_t scratch_elems, const F& f) {
  const int64_t nb = batch_count(g);
  const double work = double(g.m) * double(g.n) * double(g.k);
  const bool nested = omp_in_parallel();
  const int64_t max_threads = nested ? 1 : omp_get_max_threads();
  const bool split = nb > 1 && max_threads > 1 && work * double(nb) >= kMinParallelWork &&
                     (work < kLargeGemmWork || nb >= 4 * max_threads);
  const int64_t slots = split ? std::min(max_threads, nb) : 1;
  const Scratch<S> scratch(slots * scratch_elems);
  if (!split) {
    for (int64_t i = 0; i < nb; ++i) f(batch_offsets(g, i), scratch.get());
    return;
  }
  detail::parallel_for(0, nb, 1, [&](int64_t begin, int64_t end) {
    S* mine = scratch.get() + (nested ? 0 : omp_get_thread_num()) * scratch_elems;
    for (int64_t i = begin; i < end; ++i) f(batch_offsets(g, i), mine);
  });
}

/// dst (rows x cols, contiguous) = src (element (i, j) at src[i * rs + j * cs]), converted.
/// Parallel over rows unless already inside a parallel region.
template <class D, class S>
void pack(const S* src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, D* dst) {
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / cols);
  detail::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const S* s = src + i * rs;
      D* d = dst + i * cols;
      if (cs == 1) {
        for (int64_t j = 0; j < cols; ++j) d[j] = kernels::convert<D>(s[j]);
      } else {
        for (int64_t j = 0; j < cols; ++j) d[j] = kernels::convert<D>(s[j * cs]);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// float32 / float64 through CBLAS.

// Note [Small products on one thread]
// OpenBLAS and oneDNN thread a product once it passes their own small thresholds, which sit
// far below the size where a second thread pays: an OpenMP fork/join costs ~4 us on a 2-core
// machine, and a [64,10] x [10,512] product that takes 4-8 us on one thread took 10-23 us on
// two (both libraries), which made the 10-512-10 MLP step 2.5x slower on 2 threads than on 1.
// Measured there, one thread is at least as fast below ~2^21 multiply-adds (at 2^21 the two
// are even; at 2^22 two threads win by 13-35%), so smaller products run on the calling thread
// alone. Both libraries read omp_get_max_threads() at each call (the OpenMP builds), so
// lowering it around the call is enough and costs nothing.
constexpr double kMinThreadedMultiplyAdds = double(1 << 21);

/// Limits OpenMP, and with it the BLAS called inside the scope, to one thread on the calling
/// thread when the product is small; restores the previous limit on exit.
class SmallProductOnOneThread {
 public:
  SmallProductOnOneThread(blasint m, blasint n, blasint k)
      : saved_(double(m) * double(n) * double(k) < kMinThreadedMultiplyAdds
                   ? omp_get_max_threads()
                   : 1) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SmallProductOnOneThread() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SmallProductOnOneThread(const SmallProductOnOneThread&) = delete;
  SmallProductOnOneThread& operator=(const SmallProductOnOneThread&) = delete;

 private:
  int saved_;  // the limit to restore; 1 when nothing was changed
};

void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha,
               const float* a, blasint lda, const float* b, blasint ldb, float beta, float* c,
               blasint ldc) {
  const SmallProductOnOneThread threads(m, n, k);
#if IGNIS_WITH_DNNL
  if (sgemm_library() == SgemmLibrary::OneDnn) {
    const dnnl_status_t rc = dnnl_sgemm(
        ta == CblasTrans ? 'T' : 'N',
        tb == CblasTrans ? 'T' : 'N',
        m,
        n,
        k,
        alpha,
        a,
        lda,
        b,
        ldb,
        beta,
        c,
        ldc);
    IGNIS_CHECK(
        rc == dnnl_success,
        Error,
        "[matmul] oneDNN's sgemm failed (status {}) on ({} x {}) @ ({} x {})",
        int(rc),
        m,
        k,
        k,
        n);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k,
               double alpha, const double* a, blasint lda, const double* b, blasint ldb,
               double beta, double* c, blasint ldc) {
  const SmallProductOnOneThread threads(m, n, k);
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void blas_gemv(CBLAS_TRANSPOSE t, blasint rows, blasint cols, float alpha, const float* a,
               blasint lda, const float* x, blasint incx, float beta, float* y, blasint incy) {
  cblas_sgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, incy);
}
void blas_gemv(CBLAS_TRANSPOSE t, blasint rows, blasint cols, double alpha, const double* a,
               blasint lda, const double* x, blasint incx, double beta, double* y, blasint incy) {
  cblas_dgemv(CblasRowMajor, t, rows, cols, alpha, a, lda, x, incx, beta, y, incy);
}
float blas_dot(blasint n, const float* x, blasint incx, const float* y, blasint incy) {
  return cblas_sdot(n, x, incx, y, incy);
}
double blas_dot(blasint n, const double* x, blasint incx, const double* y, blasint incy) {
  return cblas_ddot(n, x, incx, y, incy);
}

// Note [GEMM operand layouts]
// Row-major BLAS reads a matrix through a leading dimension: element (i, j) at i * ld + j.
// An operand whose column stride is 1 therefore goes in as is (NoTrans, ld = row stride), and
// one whose row stride is 1 — a transposed view, column-major — goes in as the transpose of a
// row-major matrix (Trans, ld = column stride). The stride along a dimension of size 1 never
// matters and is ignored. BLAS needs ld >= max(1, stored columns) and ld within blasint;
// anything else (a strided slice, rows repeated by stride 0) is packed into a contiguous
// buffer first. A vector operand (gemv, dot) only needs a non-zero increment.

/// How one operand reaches BLAS.
struct OperandPlan {
  bool pack = false;  // copy into a contiguous rows x cols buffer first
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  blasint ld = 1;   // as a matrix
  blasint inc = 1;  // as a vector: the stride along its length
};

OperandPlan matrix_plan(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  OperandPlan p;
  if ((cols == 1 || cs == 1) && (rows == 1 || (rs >= cols && rs <= kMaxBlasInt))) {
    p.trans = CblasNoTrans;
    p.ld = blasint(rows == 1 ? cols : rs);
  } else if ((rows == 1 || rs == 1) && (cols == 1 || (cs >= rows && cs <= kMaxBlasInt))) {
    p.trans = CblasTrans;
    p.ld = blasint(cols == 1 ? rows : cs);
  } else {
    p.pack = true;
    p.ld = blasint(cols);
  }
  return p;
}

OperandPlan vector_plan(int64_t length, int64_t stride) {
  OperandPlan p;
  if (length == 1) return p;
  p.pack = stride == 0 || stride > kMaxBlasInt;
  p.inc = p.pack ? 1 : blasint(stride);
  return p;
}

/// One (m x k) @ (k x n) product in float or double, planned once for a whole batch (every
/// matrix of a batch has the same strides).
template <class T>
struct BlasGemm {
  enum class Kind { Dot, GemvA, GemvB, Gemm };  // m = n = 1 / n = 1 / m = 1 / general
  Kind kind;
  int64_t m, n, k;
  int64_t a_rs, a_cs, b_rs, b_cs, ldc;
  OperandPlan pa, pb;

  BlasGemm(int64_t m_, int64_t n_, int64_t k_, int64_t a_rs_, int64_t a_cs_, int64_t b_rs_,
           int64_t b_cs_, int64_t c_rs)
      : m(m_),
        n(n_),
        k(k_),
        a_rs(a_rs_),
        a_cs(a_cs_),
        b_rs(b_rs_),
        b_cs(b_cs_),
        ldc(std::max(c_rs, n_)) {
    kind = m == 1 && n == 1 ? Kind::Dot : n == 1 ? Kind::GemvA : m == 1 ? Kind::GemvB : Kind::Gemm;
    pa = (kind == Kind::Dot || kind == Kind::GemvB) ? vector_plan(k, a_cs)
                                                    : matrix_plan(m, k, a_rs, a_cs);
    pb = (kind == Kind::Dot || kind == Kind::GemvA) ? vector_plan(k, b_rs)
                                                    : matrix_plan(k, n, b_rs, b_cs);
  }

  int64_t scratch_elems() const { return (pa.pack ? m * k : 0) + (pb.pack ? k * n : 0); }

  /// C = alpha * A @ B + beta * C (C not read when beta == 0). scratch: scratch_elems().
  void run(const T* A, const T* B, T* C, T alpha, T beta, T* scratch) const {
    if (pa.pack) {
      pack(A, m, k, a_rs, a_cs, scratch);
      A = scratch;
      scratch += m * k;
    }
    if (pb.pack) {
      pack(B, k, n, b_rs, b_cs, scratch);
      B = scratch;
    }
    const blasint bm = blasint(m), bn = blasint(n), bk = blasint(k);
    switch (kind) {
      case Kind::Dot: {
        const T d = blas_dot(bk, A, pa.inc, B, pb.inc);
        C[0] = beta == T(0) ? alpha * d : alpha * d + beta * C[0];
        return;
      }
      case Kind::GemvA:  // C[:, 0] = A @ B[:, 0]; y is C's column, increment ldc
        if (beta == T(0))
          for (int64_t i = 0; i < m; ++i) C[i * ldc] = T(0);  // BLAS may scale NaN by 0
        if (pa.trans == CblasNoTrans)
          blas_gemv(CblasNoTrans, bm, bk, alpha, A, pa.ld, B, pb.inc, beta, C, blasint(ldc));
        else
          blas_gemv(CblasTrans, bk, bm, alpha, A, pa.ld, B, pb.inc, beta, C, blasint(ldc));
        return;
      case Kind::GemvB:  // C[0, :] = A[0, :] @ B, i.e. B^T times A's row
        if (beta == T(0))
          for (int64_t j = 0; j < n; ++j) C[j] = T(0);
        if (pb.trans == CblasNoTrans)
          blas_gemv(CblasTrans, bk, bn, alpha, B, pb.ld, A, pa.inc, beta, C, 1);
        else
          blas_gemv(CblasNoTrans, bn, bk, alpha, B, pb.ld, A, pa.inc, beta, C, 1);
        return;
      case Kind::Gemm:
        blas_gemm(pa.trans, pb.trans, bm, bn, bk, alpha, A, pa.ld, B, pb.ld, beta, C, blasint(ldc));
        return;
    }
  }
};

template <class T>
void blas_batched_gemm(const GemmArgs& g) {
  const BlasGemm<T> plan(g.m, g.n, g.k, g.a.row_stride, g.a.col_stride, g.b.row_stride,
                         g.b.col_stride, g.c.row_stride);
  const T alpha = T(g.alpha.to_double()), beta = T(g.beta.to_double());
  const T* A = static_cast<const T*>(g.a.data);
  const T* B = static_cast<const T*>(g.b.data);
  T* C = static_cast<T*>(g.c.data);
  for_each_matrix<T>(g, plan.scratch_elems(), [&](const BatchOffsets& o, T* scratch) {
    plan.run(A + o.a, B + o.b, C + o.c, alpha, beta, scratch);
  });
}

// ---------------------------------------------------------------------------------------------
// bfloat16 / float16: convert to float, sgemm, round once.

template <class T>
void converted_batched_gemm(const GemmArgs& g) {
  const int64_t m = g.m, n = g.n, k = g.k;
  const BlasGemm<float> plan(m, n, k, k, 1, n, 1, n);  // contiguous float buffers
  const float alpha = float(g.alpha.to_double()), beta = float(g.beta.to_double());
  const T* A = static_cast<const T*>(g.a.data);
  const T* B = static_cast<const T*>(g.b.data);
  T* C = static_cast<T*>(g.c.data);
  const int64_t c_rs = g.c.row_stride;
  for_each_matrix<float>(g, m * k + k * n + m * n, [&](const BatchOffsets& o, float* buf) {
    float* fa = buf;
    float* fb = fa + m * k;
    float* fc = fb + k * n;
    pack(A + o.a, m, k, g.a.row_stride, g.a.col_stride, fa);
    pack(B + o.b, k, n, g.b.row_stride, g.b.col_stride, fb);
    if (beta != 0) pack(C + o.c, m, n, c_rs, int64_t(1), fc);
    plan.run(fa, fb, fc, alpha, beta, nullptr);
    T* c = C + o.c;
    const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / n);
    detail::parallel_for(0, m, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * c_rs + j] = kernels::convert<T>(fc[i * n + j]);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Integers: C[i, :] = alpha * sum_p A[i, p] * B[p, :] + beta * C[i, :], row by row (i-k-j:
// B's rows are read contiguously and the inner loop vectorises; a transposed B is read
// column by column as dot products instead). Unsigned arithmetic gives
// PyTorch's wrap-around on overflow without undefined behaviour.

template <class T>
void integer_batched_gemm(const GemmArgs& g) {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  const int64_t m = g.m, n = g.n, k = g.k;
  const U alpha = U(g.alpha.to_int()), beta = U(g.beta.to_int());
  const bool read_c = g.beta.to_int() != 0;
  const T* A = static_cast<const T*>(g.a.data);
  const T* B = static_cast<const T*>(g.b.data);
  T* C = static_cast<T*>(g.c.data);
  const int64_t a_rs = g.a.row_stride, a_cs = g.a.col_stride;
  const int64_t b_rs = g.b.row_stride, b_cs = g.b.col_stride, c_rs = g.c.row_stride;
  const bool columns_contiguous = b_cs != 1 && b_rs == 1;
  const int64_t rows = batch_count(g) * m;
  const bool nested = omp_in_parallel();
  const int64_t slots = nested ? 1 : omp_get_max_threads();
  const Scratch<U> acc_all(slots * n);
  const int64_t grain = std::max<int64_t>(1, detail::kGrainSize / std::max<int64_t>(1, n * k));
  detail::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    U* acc = acc_all.get() + (nested ? 0 : omp_get_thread_num()) * n;
    for (int64_t r = r0; r < r1; ++r) {
      const BatchOffsets o = batch_offsets(g, r / m);
      const int64_t i = r % m;
      const T* a = A + o.a + i * a_rs;
      const T* b = B + o.b;
      T* c = C + o.c + i * c_rs;
      if (columns_contiguous) {  // transposed B: dot products with B's columns (i-j-k)
        for (int64_t j = 0; j < n; ++j) {
          const T* bcol = b + j * b_cs;
          U s = 0;
          if (a_cs == 1) {
#pragma omp simd reduction(+ : s)
            for (int64_t p = 0; p < k; ++p) s += U(a[p]) * U(bcol[p]);
          } else {
            for (int64_t p = 0; p < k; ++p) s += U(a[p * a_cs]) * U(bcol[p]);
          }
          acc[j] = s;
        }
      } else {  // i-k-j: add a multiple of B's row p to the accumulators
        for (int64_t j = 0; j < n; ++j) acc[j] = 0;
        for (int64_t p = 0; p < k; ++p) {
          const U av = U(a[p * a_cs]);
          if (av == 0) continue;
          const T* brow = b + p * b_rs;
          if (b_cs == 1) {
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) acc[j] += av * U(brow[j]);
          } else {
            for (int64_t j = 0; j < n; ++j) acc[j] += av * U(brow[j * b_cs]);
          }
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        U v = alpha * acc[j];
        if (read_c) v += beta * U(c[j]);
        c[j] = T(v);
      }
    }
  });
}

void gemm_cpu(const GemmArgs& g) {
  if (is_floating(g.dtype)) {
    IGNIS_CHECK(g.m <= kMaxBlasInt && g.n <= kMaxBlasInt && g.k <= kMaxBlasInt, NotImplementedError,
                "[gemm] matrix sizes ({} x {}) @ ({} x {}) exceed the BLAS integer range", g.m, g.k,
                g.k, g.n);
  }
  switch (g.dtype) {
    case DType::Float32:
      return blas_batched_gemm<float>(g);
    case DType::Float64:
      return blas_batched_gemm<double>(g);
    case DType::BFloat16:
#if IGNIS_WITH_DNNL
      if (dnnl_bf16_gemm(g)) return;
#endif
      return converted_batched_gemm<BFloat16>(g);
    case DType::Float16:
      return converted_batched_gemm<Half>(g);
    case DType::Int64:
      return integer_batched_gemm<int64_t>(g);
    case DType::Int32:
      return integer_batched_gemm<int32_t>(g);
    case DType::UInt8:
      return integer_batched_gemm<uint8_t>(g);
    case DType::Bool:
      break;
  }
  throw DTypeError("[gemm] matrix products of bool tensors are not supported");
}

}  // namespace

void register_linalg_cpu() { detail::gemm_kernel.set(DeviceType::CPU, &gemm_cpu); }

}  // namespace ignis::cpu
