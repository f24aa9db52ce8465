// `ignis train --preset airbench94`: the CIFAR-10 speed recipe (airbench.cpp says what it
// runs and how it is timed).
#pragma once

#include "options.h"

namespace ignis_cli {

/// Runs the preset with the options main.cpp lets through (--data-dir, --device, --seed,
/// --out, --limit, --epochs, --batch-size, --amp, --channels-last); returns the exit status.
int run_airbench(TrainOptions options);

}  // namespace ignis_cli
