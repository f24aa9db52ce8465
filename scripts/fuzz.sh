#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) under ASan + UBSan and runs each for SECONDS seconds,
# one after the other, starting from seeds that make_seeds writes. Fails on the first crash,
# sanitizer report, leak, timeout (a single input over 10 s) or allocation over 512 MB
# (a forged size that got through), leaving the input under build-<preset>/fuzz-artifacts/.
# Prints the executions per target.
#
#   scripts/fuzz.sh SECONDS [TARGET...]     targets: safetensors idx idx_gzip cifar csv image
#                                           config cli
#   IGNIS_FUZZ_PRESET=asan scripts/fuzz.sh 25   reuses the asan build (what CI does)
#
# Reproduce a crash: build-fuzz/fuzz/fuzz_<target> build-fuzz/fuzz-artifacts/<target>-crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors idx idx_gzip cifar csv image config cli)
preset=${IGNIS_FUZZ_PRESET:-fuzz}
build=build-$preset

cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target fuzz_all

seeds=$build/fuzz-seeds
rm -rf "$seeds"
"$build/fuzz/make_seeds" "$seeds"
mkdir -p "$build/fuzz-artifacts"

summary=()
for t in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$t
  mkdir -p "$corpus"
  log=$build/fuzz-artifacts/$t.log
  echo "fuzz: $t for ${seconds}s"
  # The command line's targets print a usage error (or the help) for almost every input:
  # their stdout and stderr are closed (libFuzzer's and the sanitizers' reports still come).
  quiet=()
  case $t in config | cli) quiet=(-close_fd_mask=3) ;; esac
  # The corpus directory collects what the fuzzer found interesting (kept between runs);
  # the seeds are read but not written.
  if ! "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=512 -print_final_stats=1 "${quiet[@]}" \
      -artifact_prefix="$build/fuzz-artifacts/$t-" "$corpus" "$seeds/$t" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $t FAILED (full log: $log; the input is under $build/fuzz-artifacts/)" >&2
    exit 1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')
  summary+=("$(printf '%-12s %10s executions in %ss, coverage %s edges, no crash' "$t" "$execs" "$seconds" "$cov")")
done
echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
