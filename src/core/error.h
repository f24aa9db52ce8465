// IGNIS_CHECK: the one macro for argument checks. Formats the message with fmt only when the
// check fails, and throws the named ignis::Error subclass.
//   IGNIS_CHECK(a.dim() == 2, ShapeError, "[mm] expected 2-D tensors, got {}", shape_str(..));
#pragma once

#include <fmt/format.h>

#include "ignis/error.h"

#define IGNIS_CHECK(cond, ErrorType, ...)                   \
  do {                                                      \
    if (!(cond)) throw ::ignis::ErrorType(fmt::format(__VA_ARGS__)); \
  } while (0)
