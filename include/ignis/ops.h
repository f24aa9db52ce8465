// Every tensor function, grouped by family. Rules shared by all of them:
// - Binary and ternary ops broadcast as NumPy/PyTorch do and promote dtypes as
//   torch.promote_types; a Scalar operand takes part only by category (int32 + 2 stays int32).
// - Inputs may be non-contiguous, broadcast (stride 0) or empty; outputs are new contiguous
//   tensors unless the function is a view. `_`-suffixed functions work in place and throw
//   DTypeError when the result type cannot be stored in the tensor (int + 0.5 into int).
// - Errors throw an ignis::Error subclass whose message starts with "[op]".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ignis/tensor.h"

namespace ignis {

// ============================== factories ==================================================
/// Uninitialised tensor of the given shape. Default dtype float32, device CPU, contiguous;
/// opts.memory_format channels_last (4-D shapes only) gives NHWC strides, preserve a ValueError.
Tensor empty(const Shape& shape, TensorOptions opts = {});
Tensor zeros(const Shape& shape, TensorOptions opts = {});
Tensor ones(const Shape& shape, TensorOptions opts = {});
/// Filled with value; the default dtype follows the value (bool, int64 or float32).
Tensor full(const Shape& shape, const Scalar& value, TensorOptions opts = {});
/// [0, end) or [start, end) by step. int64 when all bounds are integers, else float32.
Tensor arange(const Scalar& end, TensorOptions opts = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              TensorOptions opts = {});
/// steps evenly spaced values from start to end inclusive.
Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
/// n x m identity (m defaults to n).
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions opts = {});
/// The `_like` family: the shape of t, and t's dtype and device unless opts say otherwise.
/// The layout follows opts.memory_format, by default preserve: t's strides when t is dense
/// (channels-last, a transpose), else t.suggest_memory_format(), as in PyTorch.
Tensor empty_like(const Tensor& t, TensorOptions opts = {});
Tensor zeros_like(const Tensor& t, TensorOptions opts = {});
Tensor ones_like(const Tensor& t, TensorOptions opts = {});
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions opts = {});
Tensor rand_like(const Tensor& t, TensorOptions opts = {});
Tensor randn_like(const Tensor& t, TensorOptions opts = {});
/// A tensor holding a copy of the values; shape defaults to {values.size()}.
template <class T>
Tensor tensor(const std::vector<T>& values, std::optional<Shape> shape = std::nullopt,
              TensorOptions opts = {});
template <class T>
Tensor tensor(std::initializer_list<T> values, std::optional<Shape> shape = std::nullopt,
              TensorOptions opts = {}) {
  return tensor(std::vector<T>(values), std::move(shape), opts);
}
/// A 0-dim tensor holding value (dtype from the scalar: bool, int64 or float32).
Tensor scalar_tensor(const Scalar& value, TensorOptions opts = {});
/// A tensor over memory the caller owns (not copied, not freed unless a deleter is given).
/// Strides default to contiguous; data must outlive every tensor that views it.
Tensor from_blob(void* data, const Shape& shape, DType dtype,
                 std::optional<Shape> strides = std::nullopt,
                 void (*deleter)(void*) = nullptr, Device device = Device::cpu());

// ============================== random =====================================================
// Counter-based Philox 4x32-10 keyed by (seed, offset): element i of a draw depends only on
// the seed, the generator offset at the call and i, so the CPU and CUDA give the same values.
/// Seeds the default generator (and resets its offset).
void manual_seed(uint64_t seed);
/// A random-number stream; the default one is shared by all calls that pass no generator.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  void manual_seed(uint64_t seed) { seed_ = seed, offset_ = 0; }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }
  /// Reserves `blocks` Philox blocks and returns the offset of the first (thread-safe for the
  /// default generator: callers lock through default_generator()).
  uint64_t advance(uint64_t blocks) {
    uint64_t o = offset_;
    offset_ += blocks;
    return o;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};
Generator& default_generator();
/// Uniform in [0, 1).
Tensor rand(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);
/// Standard normal.
Tensor randn(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);
/// Integers uniform in [low, high); int64 by default.
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts = {},
               Generator* gen = nullptr);
/// 0/1 draws with per-element probabilities p (same shape and dtype as p).
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
/// A random permutation of 0..n-1 (int64 by default).
Tensor randperm(int64_t n, TensorOptions opts = {}, Generator* gen = nullptr);

// ============================== elementwise ================================================
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  ///< a + alpha * b
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);  ///< a - alpha * b
Tensor sub(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
/// True division promotes integers to float; Floor and Trunc keep integer dtypes.
/// Integer division by zero throws ValueError.
Tensor div(const Tensor& a, const Tensor& b, RoundingMode mode = RoundingMode::True);
Tensor div(const Tensor& a, const Scalar& b, RoundingMode mode = RoundingMode::True);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor pow(const Tensor& base, const Scalar& exponent);
Tensor pow(const Scalar& base, const Tensor& exponent);
Tensor maximum(const Tensor& a, const Tensor& b);  ///< NaN propagates
Tensor minimum(const Tensor& a, const Tensor& b);  ///< NaN propagates
Tensor& add_(Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor& sub_(Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor& mul_(Tensor& a, const Tensor& b);
Tensor& div_(Tensor& a, const Tensor& b, RoundingMode mode = RoundingMode::True);

// Unary math. Integer and bool inputs of the floating functions promote to float32.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
/// gelu(x) = x * Phi(x); approximate = "tanh" uses the tanh formula, "none" the exact erf.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor reciprocal(const Tensor& x);  ///< 1 / x
/// log(1 + exp(beta x)) / beta, linear above threshold (as torch.nn.functional.softplus).
Tensor softplus(const Tensor& x, double beta = 1, double threshold = 20);
/// Clamps to [min, max]; either bound may be absent. NaN stays NaN.
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor clamp_min(const Tensor& x, const Scalar& min);
Tensor clamp_max(const Tensor& x, const Scalar& max);
/// Unary in-place versions; the tensor must already have the result dtype.
Tensor& neg_(Tensor& x);
Tensor& abs_(Tensor& x);
Tensor& exp_(Tensor& x);
Tensor& log_(Tensor& x);
Tensor& sqrt_(Tensor& x);
Tensor& sin_(Tensor& x);
Tensor& cos_(Tensor& x);
Tensor& tanh_(Tensor& x);
Tensor& sigmoid_(Tensor& x);
Tensor& relu_(Tensor& x);
Tensor& clamp_(Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);

/// Elementwise choice: cond ? a : b (cond must be bool).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
/// 0-dim bool on the tensors' (common) device: true when no element of any of them is inf or
/// NaN; true for an empty list (on the CPU). One pass per dtype over the dense tensors (a
/// multi-tensor launch on CUDA) raising one device flag; nothing is read back, so a training
/// step can check its gradients without waiting for the GPU, and inside a CUDA graph capture.
Tensor all_finite(const std::vector<Tensor>& tensors);
// Comparisons and logic return bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);
/// True when both have the same shape and all elements are equal.
bool equal(const Tensor& a, const Tensor& b);
/// |a - b| <= atol + rtol * |b| everywhere (NaN equal to NaN when equal_nan).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);

// ============================== reductions =================================================
// `dims` may be negative and list several dimensions; an empty list means all of them.
// Integer and bool sums accumulate in int64, as PyTorch's do.
Tensor sum(const Tensor& x, const Shape& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Largest element of the whole tensor (NaN if any is NaN).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
/// Values and int64 indices along dim (first index among equal values; NaN wins).
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
/// Index of the largest element (flattened when dim is absent).
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor amax(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// Variance with Bessel-style correction (1 = unbiased, 0 = population).
Tensor var(const Tensor& x, const Shape& dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const Shape& dims = {}, double correction = 1, bool keepdim = false);
/// p-norm for p = 1, 2 or infinity (std::numeric_limits<double>::infinity()).
Tensor norm(const Tensor& x, double p = 2, const Shape& dims = {}, bool keepdim = false);
Tensor all(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Shape& dims = {}, bool keepdim = false);
/// log(sum(exp(x))) computed stably (max subtracted first).
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false);
/// Cumulative sum along dim (integers accumulate in int64).
Tensor cumsum(const Tensor& x, int64_t dim);
/// softmax / log_softmax along dim, stable for large inputs. Integer inputs become float32.
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// ============================== linear algebra =============================================
/// PyTorch's matmul: 1-D·1-D dot, 2-D·2-D mm, batched with broadcasting over leading dims.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);  ///< (n, k) @ (k, m)
Tensor bmm(const Tensor& a, const Tensor& b);  ///< (B, n, k) @ (B, k, m)
/// beta * input + alpha * (a @ b); input broadcasts to (n, m).
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
               const Scalar& alpha = 1);
Tensor outer(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);
/// torch.linalg.eigh of a real symmetric [n, n] float32/float64 matrix: its eigenvalues in
/// ascending order and the orthonormal eigenvectors as the columns of the second result. Only
/// the triangle named by uplo ('L': lower, as PyTorch's default) is read. Solved by LAPACK in
/// float64 on the host (a CUDA input makes a round trip; meant for small matrices); no
/// gradient is recorded.
std::tuple<Tensor, Tensor> linalg_eigh(const Tensor& a, char uplo = 'L');

// ============================== indexing and joining ======================================
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// Copy of x with out[index[i][j]][j] = src[i][j] (dim 0 shown); the last write wins.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 const Scalar& alpha = 1);
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                   const Scalar& alpha = 1);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor& masked_fill_(Tensor& x, const Tensor& mask, const Scalar& value);
/// 1-D tensor of the elements where mask (broadcast with x) is true.
Tensor masked_select(const Tensor& x, const Tensor& mask);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Views of consecutive pieces of split_size along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const Shape& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
/// int64 one-hot of integer class indices; num_classes = -1 infers max + 1.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);
/// k largest (or smallest) values and their int64 indices along dim.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1,
                                bool largest = true, bool sorted = true);
/// Sorted values and int64 indices along dim (NaN sorts as the largest).
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                                bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false,
               bool stable = false);
/// Lower/upper triangle of the last two dims (others zeroed); diagonal shifts the boundary.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// ============================== shape (free-function forms of the view methods) ===========
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor squeeze(const Tensor& x, std::optional<int64_t> dim = std::nullopt);
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// The shape two shapes broadcast to; throws ShapeError naming both.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// ============================== threads ====================================================
/// Threads used by CPU kernels (OpenMP and OpenBLAS). Defaults to the number of cores.
void set_num_threads(int n);
int get_num_threads();
/// Which library runs CPU matrix products, with OpenBLAS's kernel set, e.g. "OpenBLAS (Zen
/// kernels)" (src/cpu/sgemm_library.cpp says how it is chosen; IGNIS_CPU_GEMM overrides).
std::string cpu_matmul_library();
/// Whether float32 3x3 stride-1 convolutions on the CPU may use oneDNN's Winograd kernels
/// (Note [Winograd convolutions], src/cpu/dnnl_conv.cpp): forward and input gradient 1.5-4x
/// faster on ResNet's layers, with rounding errors a few times a direct convolution's (about
/// 1e-6 of the output's scale, where cuDNN's default TF32 convolutions round at 1e-3). On by
/// default; IGNIS_CPU_WINOGRAD=0 in the environment turns it off from the start.
void set_cpu_winograd(bool allow);
bool cpu_winograd();

}  // namespace ignis
