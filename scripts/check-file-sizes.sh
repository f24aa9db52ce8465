#!/usr/bin/env bash
# Keeps source files small enough to read: lists C++/CUDA files over 800 lines and fails
# when one passes 1,200 (split it by op family instead).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
while IFS= read -r f; do
  n=$(wc -l <"$f")
  if [ "$n" -gt 1200 ]; then
    echo "file-size: $f has $n lines (limit 1200): split it" >&2
    status=1
  elif [ "$n" -gt 800 ]; then
    echo "file-size: $f has $n lines (over 800: consider splitting)"
  fi
done < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
exit $status
