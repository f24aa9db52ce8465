// Pieces of the safetensors format shared by the reader and the writer: the dtype tags and
// the limits. Kept in one place so that a tag written is always a tag read back.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ignis/dtype.h"

namespace ignis::io_detail {

// The format is little-endian on disk; tensors are copied byte for byte, so the host must be
// little-endian too (every platform Ignis builds for is).
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

/// The key under which string metadata lives in the header (not a tensor).
inline constexpr std::string_view kMetadataKey = "__metadata__";
/// Headers above this are refused before anything is allocated for them (the reference
/// implementation uses the same 100 MB cap).
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

inline const char* dtype_tag(DType t) {
  switch (t) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::BFloat16:
      return "BF16";
    case DType::Float16:
      return "F16";
    case DType::Int64:
      return "I64";
    case DType::Int32:
      return "I32";
    case DType::UInt8:
      return "U8";
    case DType::Bool:
      return "BOOL";
  }
  return "?";
}

inline std::optional<DType> dtype_from_tag(std::string_view tag) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    if (tag == dtype_tag(t)) return t;
  }
  return std::nullopt;
}

}  // namespace ignis::io_detail
