// Helpers shared by the tests: inputs from an RNG independent of Ignis's own, tensors with the
// same values in different memory layouts, float64 read-back, and a comparison that reports
// where two results differ (first mismatches, worst index, max abs/rel error).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ignis/ignis.h"

namespace ignis::testing {

/// n doubles uniform in [lo, hi) from std::mt19937_64(seed) (not Ignis's generator).
std::vector<double> random_values(int64_t n, double lo, double hi, uint64_t seed);

/// A float64 tensor of `shape` holding random_values(numel, lo, hi, seed).
Tensor random_tensor(const Shape& shape, double lo, double hi, uint64_t seed);

/// Expects autograd::gradcheck(fn, inputs) to report no mismatch; `what` names the case.
void expect_gradcheck(const std::string& what,
                      const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& inputs);

/// Memory layouts that must all give the same result.
enum class Layout {
  Contiguous,  // plain row-major
  Transposed,  // stored with the dims reversed, then permuted back (column-major for 2-D)
  Strided,     // every other element of a twice-as-long last dimension
  Offset,      // a view starting in the middle of its storage
};
const char* layout_name(Layout l);
inline constexpr Layout kAllLayouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Strided,
                                         Layout::Offset};

/// A tensor of dtype holding `values` (row-major for `shape`) in the given layout.
Tensor make_input(const std::vector<double>& values, const Shape& shape, DType dtype,
                  Layout layout = Layout::Contiguous);
/// make_input's layout on `device`, with `gap` in the storage around the view that the view
/// does not cover (Strided's gaps, Offset's head): what a kernel reading past the view sees.
Tensor make_input_with_gaps(const std::vector<double>& values, const Shape& shape, DType dtype,
                            Layout layout, double gap, Device device);
/// A list shaped like a model's gradients, for all_finite, on `device`, with finite values from
/// `seed`: every floating dtype and layout (dense permuted, channels-last, and strided and offset
/// views whose gaps hold NaN, which the check must not read), an int64, an empty and a 0-dim
/// tensor, one of 3 * 65536 + 5 elements (several threads; chunks of a CUDA launch) and, with
/// 48 small ones, 36 dense float32 tensors: more than one CUDA launch's table holds (32).
std::vector<Tensor> gradient_like_list(Device device, uint64_t seed);
/// The values of t in row-major order, as doubles (t converted to float64 on the CPU).
std::vector<double> values_of(const Tensor& t);
/// values rounded through dtype (what storing a double in that dtype gives back).
std::vector<double> round_to(const std::vector<double>& values, DType dtype);

/// Relative tolerance suited to results stored in dtype.
double default_rtol(DType dtype);

/// Elementwise |actual - expected| <= atol + rtol * |expected|; NaN must match NaN and
/// infinities must match with sign. On failure lists the first mismatches and the worst one.
::testing::AssertionResult all_close(const std::vector<double>& actual,
                                     const std::vector<double>& expected, double rtol, double atol);
::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected,
                                     double rtol, double atol);

/// Row-major multi-index of flat index i in shape.
std::vector<int64_t> unravel(int64_t i, const Shape& shape);
/// Flat row-major index of idx in shape.
int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape);

}  // namespace ignis::testing

/// Expects `stmt` to throw ExcType whose what() contains `substr`.
#define EXPECT_THROW_MSG(stmt, ExcType, substr)                                              \
  do {                                                                                       \
    try {                                                                                    \
      stmt;                                                                                  \
      ADD_FAILURE() << "expected " #ExcType " from: " #stmt;                                 \
    } catch (const ExcType& e_) {                                                            \
      EXPECT_NE(std::string(e_.what()).find(substr), std::string::npos)                      \
          << "message was: " << e_.what();                                                   \
    } catch (const std::exception& e_) {                                                     \
      ADD_FAILURE() << "expected " #ExcType ", got another exception: " << e_.what();        \
    }                                                                                        \
  } while (0)
