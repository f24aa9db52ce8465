// Compiler macros shared by the public headers and the kernels. Nothing else lives here.
#pragma once

// Functions that must compile for both the host and a CUDA device (the shared kernels in
// src/kernels and the Half/BFloat16 conversions). Under a host compiler this is plain inline.
#if defined(__CUDACC__)
#define IGNIS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define IGNIS_HOST_DEVICE inline
#endif

// IGNIS_HOST_DEVICE, and always inlined by the host compiler too: for the branch-free math of
// src/kernels/fast_math.h and the functors that call it, which are too long for the host
// compiler's inlining heuristics, yet only vectorise when inlined into the loop.
#if defined(__CUDACC__)
#define IGNIS_HOST_DEVICE_ALWAYS_INLINE __host__ __device__ __forceinline__
#else
#define IGNIS_HOST_DEVICE_ALWAYS_INLINE inline __attribute__((always_inline))
#endif
