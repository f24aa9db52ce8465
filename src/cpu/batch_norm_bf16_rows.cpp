// The bf16 channels-last batch-norm passes of batch_norm_bf16_rows.h, built from
// batch_norm_bf16_rows.inc twice: with 8 float lanes for the build's baseline ISA and with
// 16 inside an AVX-512 target region, each in its own namespace so that no inline function is
// shared between the builds (a shared one could be emitted once, with AVX-512 instructions,
// and then called on a CPU without them). Each entry point picks the 16-lane build where
// use_avx512() allows it.
#include "cpu/batch_norm_bf16_rows.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cpu/cpu_features.h"

namespace ignis::cpu::bf16_rows {

namespace lanes8 {
constexpr int W = 8;
#include "cpu/batch_norm_bf16_rows.inc"
}  // namespace lanes8

#if defined(__x86_64__) && defined(__GNUC__)
#define IGNIS_BN_ROWS_AVX512 1
#if defined(__clang__)
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#endif
namespace lanes16 {
constexpr int W = 16;
#include "cpu/batch_norm_bf16_rows.inc"
}  // namespace lanes16
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

namespace {
bool wide() {
#ifdef IGNIS_BN_ROWS_AVX512
  return use_avx512();
#else
  return false;
#endif
}
}  // namespace

#ifdef IGNIS_BN_ROWS_AVX512
#define IGNIS_BN_ROWS_CALL(fn, ...) (wide() ? lanes16::fn(__VA_ARGS__) : lanes8::fn(__VA_ARGS__))
#else
#define IGNIS_BN_ROWS_CALL(fn, ...) lanes8::fn(__VA_ARGS__)
#endif

void forward_apply(
    kernels::BnEpilogue e,
    const BFloat16* x,
    const BFloat16* res,
    BFloat16* y,
    int64_t rows,
    int64_t C,
    const float* scale,
    const float* shift) {
  IGNIS_BN_ROWS_CALL(forward_apply, e, x, res, y, rows, C, scale, shift);
}

void sums(
    const BFloat16* x, int64_t rows, int64_t C, const float* centre, bool squares, float* sum) {
  IGNIS_BN_ROWS_CALL(sums, x, rows, C, centre, squares, sum);
}

void grad_sums(
    kernels::BnEpilogue e,
    const BFloat16* x,
    const BFloat16* g,
    const BFloat16* y,
    BFloat16* gm_out,
    int64_t rows,
    int64_t C,
    const float* mean,
    const float* invstd,
    float* s0,
    float* s1) {
  IGNIS_BN_ROWS_CALL(grad_sums, e, x, g, y, gm_out, rows, C, mean, invstd, s0, s1);
}

void grad_apply(
    kernels::BnEpilogue e,
    const BFloat16* x,
    const BFloat16* g,
    const BFloat16* y,
    BFloat16* gi,
    int64_t rows,
    int64_t C,
    const float* mean,
    const float* invstd,
    const float* k,
    const float* mg,
    const float* mgx) {
  IGNIS_BN_ROWS_CALL(grad_apply, e, x, g, y, gi, rows, C, mean, invstd, k, mg, mgx);
}

}  // namespace ignis::cpu::bf16_rows
