// Batch norm's passes over bfloat16 channels-last rows (rows of C contiguous channels) with
// float32 per-channel values, written with vectors held in registers: each bf16 value is
// widened and each result narrowed in the register it is computed in, instead of staged
// through float buffers (src/cpu/batch_norm.cpp's general 16-bit path). Built twice from
// batch_norm_bf16_rows.inc: 8 lanes for the build's baseline (AVX2) and 16 lanes for CPUs
// with AVX-512 (use_avx512()). Each pass gives exactly the values of the staged path's
// formulas (src/kernels/batch_norm_math.h): float arithmetic, round-to-nearest-even narrowing
// that quiets NaNs as BFloat16 does.
//
// Per-channel arrays (scale, shift, mean, invstd, k, mg, mgx, and the float sums) must hold
// padded_channels(C) values, zero past C, so that a row's last partial vector reads and
// accumulates in bounds; tensor data is read and written for c < C only.
#pragma once

#include <cstdint>

#include "ignis/half.h"
#include "kernels/batch_norm_math.h"

namespace ignis::cpu::bf16_rows {

/// C rounded up to a multiple of the widest vector (16 floats).
inline int64_t padded_channels(int64_t C) { return (C + 15) / 16 * 16; }

/// Whether these kernels take epilogue e (the GELU epilogue stays on the staged path); the
/// entry points below take only these.
constexpr bool handles(kernels::BnEpilogue e) { return e != kernels::BnEpilogue::Gelu; }

/// y = epilogue(x * scale + shift [, res]) as batch_norm_output_16 computes it, over rows.
void forward_apply(
    kernels::BnEpilogue e,
    const BFloat16* x,
    const BFloat16* res,
    BFloat16* y,
    int64_t rows,
    int64_t C,
    const float* scale,
    const float* shift);

/// sum[c] += the sum over rows of x[r, c] - centre[c], or with squares of its square, in
/// float (the caller keeps runs short and adds them to double totals).
void sums(
    const BFloat16* x, int64_t rows, int64_t C, const float* centre, bool squares, float* sum);

/// s0[c] += gm and s1[c] += gm * (x - mean[c]) * invstd[c] over rows, for gm the gradient g
/// through the epilogue's ReLU (masked by y > 0), also stored to gm_out when it is given.
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
    float* s1);

/// gi = k * (gm - mg - xhat * mgx) over rows, gm as in grad_sums, xhat = (x - mean) * invstd.
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
    const float* mgx);

}  // namespace ignis::cpu::bf16_rows
