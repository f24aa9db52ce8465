// The exceptions Ignis throws. Every message starts with the op or component in brackets,
// e.g. "[matmul] cannot multiply [64, 10] by [512, 10]: inner dimensions 10 and 512 differ".
#pragma once

#include <stdexcept>
#include <string>

namespace ignis {

/// Base of every Ignis exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Shapes that do not fit together (broadcasting, matmul, view, cat …).
class ShapeError : public Error { using Error::Error; };
/// A dtype an op does not accept, or a lossy in-place result type.
class DTypeError : public Error { using Error::Error; };
/// Tensors on different devices, or a device that is absent.
class DeviceError : public Error { using Error::Error; };
/// An index or dimension out of range.
class IndexError : public Error { using Error::Error; };
/// A bad argument value (negative size, unknown option …).
class ValueError : public Error { using Error::Error; };
/// Reading or writing a file failed; the message names the file.
class IOError : public Error { using Error::Error; };
/// An allocation failed; the message gives the requested and available bytes.
class OutOfMemoryError : public Error { using Error::Error; };
/// The op has no kernel for this device or dtype.
class NotImplementedError : public Error { using Error::Error; };

}  // namespace ignis
