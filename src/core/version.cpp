// Library version string.
#include "ignis/version.h"

namespace ignis {
const char* version() { return "0.1.0"; }
}  // namespace ignis
