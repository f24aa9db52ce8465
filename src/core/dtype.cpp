// dtype names and PyTorch's promotion table for the eight Ignis dtypes.
#include "ignis/dtype.h"

namespace ignis {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
    case DType::Int64: return "int64";
    case DType::Int32: return "int32";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "?";
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // Rank along bool < uint8 < int32 < int64 < {bf16, f16} < float32 < float64.
  auto rank = [](DType t) {
    switch (t) {
      case DType::Bool: return 0;
      case DType::UInt8: return 1;
      case DType::Int32: return 2;
      case DType::Int64: return 3;
      case DType::BFloat16:
      case DType::Float16: return 4;
      case DType::Float32: return 5;
      case DType::Float64: return 6;
    }
    return 0;
  };
  // The two 16-bit floats have no common 16-bit type: PyTorch promotes them to float32.
  if ((a == DType::BFloat16 && b == DType::Float16) || (a == DType::Float16 && b == DType::BFloat16))
    return DType::Float32;
  return rank(a) >= rank(b) ? a : b;
}

DType default_dtype() { return DType::Float32; }

}  // namespace ignis
