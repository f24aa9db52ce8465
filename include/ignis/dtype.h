// Element types of tensors, their sizes and names, and PyTorch's type-promotion rules.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "ignis/half.h"

namespace ignis {

/// The element type of a tensor. The order is also the index into per-dtype tables.
enum class DType : uint8_t { Float32, Float64, BFloat16, Float16, Int64, Int32, UInt8, Bool };
inline constexpr int kNumDTypes = 8;

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kBool = DType::Bool;
// PyTorch's aliases.
inline constexpr DType kFloat = DType::Float32;
inline constexpr DType kDouble = DType::Float64;
inline constexpr DType kHalf = DType::Float16;
inline constexpr DType kLong = DType::Int64;
inline constexpr DType kInt = DType::Int32;

/// Bytes per element.
constexpr int64_t itemsize(DType t) {
  switch (t) {
    case DType::Float64:
    case DType::Int64: return 8;
    case DType::Float32:
    case DType::Int32: return 4;
    case DType::BFloat16:
    case DType::Float16: return 2;
    case DType::UInt8:
    case DType::Bool: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::BFloat16 ||
         t == DType::Float16;
}
constexpr bool is_integral(DType t, bool include_bool = false) {
  return t == DType::Int64 || t == DType::Int32 || t == DType::UInt8 ||
         (include_bool && t == DType::Bool);
}

/// "float32", "int64", … — PyTorch's spelling without the "torch." prefix.
const char* dtype_name(DType t);

/// The smallest type both operands convert to without loss of category, as torch.promote_types.
DType promote_types(DType a, DType b);

/// The default floating dtype (float32), used by factories and integer-to-float promotion.
DType default_dtype();

/// C++ type <-> DType.
template <class T>
struct CppTypeToDType;
template <> struct CppTypeToDType<float> { static constexpr DType value = DType::Float32; };
template <> struct CppTypeToDType<double> { static constexpr DType value = DType::Float64; };
template <> struct CppTypeToDType<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct CppTypeToDType<Half> { static constexpr DType value = DType::Float16; };
template <> struct CppTypeToDType<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct CppTypeToDType<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct CppTypeToDType<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct CppTypeToDType<bool> { static constexpr DType value = DType::Bool; };
template <class T>
inline constexpr DType dtype_of = CppTypeToDType<std::remove_cv_t<T>>::value;

template <DType D> struct DTypeToCppType;
template <> struct DTypeToCppType<DType::Float32> { using type = float; };
template <> struct DTypeToCppType<DType::Float64> { using type = double; };
template <> struct DTypeToCppType<DType::BFloat16> { using type = BFloat16; };
template <> struct DTypeToCppType<DType::Float16> { using type = Half; };
template <> struct DTypeToCppType<DType::Int64> { using type = int64_t; };
template <> struct DTypeToCppType<DType::Int32> { using type = int32_t; };
template <> struct DTypeToCppType<DType::UInt8> { using type = uint8_t; };
template <> struct DTypeToCppType<DType::Bool> { using type = bool; };

/// Calls `f.template operator()<T>()` with T the C++ type of `t`:
///   visit_dtype(t, [&]<class T>() { ... });
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float16: return f.template operator()<Half>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::Bool: return f.template operator()<bool>();
  }
  return f.template operator()<float>();
}

}  // namespace ignis
