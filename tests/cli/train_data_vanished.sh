#!/usr/bin/env bash
# Data that disappears during a run (--data imagefolder:PATH). `ignis train` reads and decodes
# the whole data set before its first step, and a resumed run reads it again, so:
#   1. the folder moved away while the run writes its first checkpoint (held there by
#      IGNIS_TEST_CHECKPOINT_PAUSE: a deterministic point mid-run) changes nothing: the run
#      ends with the uninterrupted run's model.safetensors, byte for byte;
#   2. a run stopped at its second checkpoint write (SIGKILL) whose folder is gone when it
#      resumes: exit 2, one line naming the folder, the checkpoint byte for byte what it was;
#   3. the same with one image removed (refused naming the folder: the split would differ,
#      so training on would silently use other data) and with one image truncated (refused
#      naming the file);
#   4. the folder restored, the resume ends with the uninterrupted run's weights and metrics,
#      and no temporary file is left.
# Usage: train_data_vanished.sh IGNIS WORK
set -euo pipefail
bin=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
tool=$here/safetensors_tool.py
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 "$here/make_imagefolder.py" images 30

flags=(--data imagefolder:images --image-size 8 --model mlp --epochs 3 --batch-size 16)
"$bin" train "${flags[@]}" --out full >/dev/null

running() { [ -r /proc/$pid/stat ] && [ "$(cut -d' ' -f3 /proc/$pid/stat)" != Z ]; }
paused_or_done() { [ -e pause ] || ! running; }
export IGNIS_TEST_CHECKPOINT_PAUSE=$PWD/pause

# 1. Moved away mid-run, after the data was read: the run does not notice.
"$bin" train "${flags[@]}" --out moved >/dev/null &
pid=$!
wait_until 120 test -e pause
mv images images.away
while running; do  # every later checkpoint pauses too: let each one through
  rm -f pause
  wait_until 120 paused_or_done
done
rm -f pause
wait $pid
mv images.away images
python3 "$tool" same full/model.safetensors moved/model.safetensors
echo "ok: the folder moved away mid-run; the run ended with the uninterrupted run's weights"

# 2. A run stopped while writing its second checkpoint: checkpoint.safetensors holds epoch 1.
"$bin" train "${flags[@]}" --out run >/dev/null &
pid=$!
{ wait_until 120 test -e pause; rm pause; }
wait_until 120 test -e pause
kill -KILL $pid
wait $pid 2>/dev/null || true
rm pause
unset IGNIS_TEST_CHECKPOINT_PAUSE
[ "$(python3 "$tool" state run/checkpoint.safetensors)" = "1 0" ]
before=$(dir_digest run)
mv images images.away
expect_error "--data imagefolder:images: 'images' is not a directory" "$bin" train --resume run
[ "$(dir_digest run)" = "$before" ] || { echo "FAIL: the run directory changed"; exit 1; }
mv images.away images

# 3. One image gone: another split, refused; one image cut short: refused naming it.
mv images/dark/007.png gone.png
expect_error "--resume run: the data in 'images' is not what the run started with \(" \
  "$bin" train --resume run
mv gone.png images/dark/007.png
cp images/bright/011.png whole.png
head -c 60 whole.png >images/bright/011.png
expect_error "images/bright/011.png: expected" "$bin" train --resume run
cp whole.png images/bright/011.png
[ "$(dir_digest run)" = "$before" ] || { echo "FAIL: the run directory changed"; exit 1; }
echo "ok: a resume without its data is refused naming the folder or file; the run is untouched"

# 4. Restored: the resume completes as if nothing had happened.
"$bin" train --resume run >/dev/null
python3 "$tool" same full/model.safetensors run/model.safetensors
same_metrics full run
leftovers=$(find run -name '*.tmp-*' -o -name '*.next')
[ -z "$leftovers" ] || { echo "FAIL: left behind: $leftovers"; exit 1; }
echo "ok: with the data restored the run resumed to the uninterrupted run's weights"
