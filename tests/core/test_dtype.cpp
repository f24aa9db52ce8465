// Placeholder: tests arrive with the implementation.
#include "support/test_support.h"
