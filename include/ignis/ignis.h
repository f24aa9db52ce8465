// The one header users include.
#pragma once

#include "ignis/autograd.h"
#include "ignis/cuda.h"
#include "ignis/device.h"
#include "ignis/dtype.h"
#include "ignis/error.h"
#include "ignis/nn_ops.h"
#include "ignis/ops.h"
#include "ignis/scalar.h"
#include "ignis/tensor.h"
#include "ignis/version.h"
