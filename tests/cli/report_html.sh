#!/bin/sh
# report.html in a real browser: a short synthetic run writes it, headless Chromium opens it
# through check_report.html, which checks that the charts rendered (non-empty boxes, one
# point per epoch on each curve, classes^2 heat-map cells) and writes PASS or FAIL into its
# DOM. The run directory's name and the class names hold HTML metacharacters, which must
# arrive escaped.
# Skipped (exit 77) without Chromium.
# Usage: report_html.sh IGNIS WORK CHECK_PAGE
set -eu
bin=$1 work=$2 page=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then echo "SKIP: chromium is absent (apt-get install chromium)"; exit 77; fi
rm -rf "$work" && mkdir -p "$work" && cd "$work"
out='run<i>&x'
"$bin" train --data synthetic --limit 400 --epochs 3 --model mlp --out "$out" >out.txt
grep -q "report  $out/report.html" out.txt || { cat out.txt; echo "FAIL: no report line"; exit 1; }
# What the page must show, from the run's own files: epochs logged and classes configured.
epochs=$(grep -c '"type":"epoch"' "$out/metrics.jsonl")
classes=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["classes"]))' "$out/config.json")
echo "run logged $epochs epochs, $classes classes"
grep -q 'run&lt;i&gt;&amp;x' "$out/report.html" || { echo "FAIL: --out not escaped"; exit 1; }
if grep -q 'run<i>' "$out/report.html"; then echo "FAIL: raw --out in the page"; exit 1; fi
# Class names come from the data set's files: a CIFAR-format directory whose names hold
# markup must show them as text.
python3 "$(dirname "$page")/make_cifar10.py" cifar 16 '<b>plane</b>' 'car&truck' bird cat deer \
  dog frog horse ship '"quoted"'
"$bin" train --data cifar10 --data-dir cifar --model mlp --limit 96 --epochs 1 --out cifar_run >/dev/null
for text in '&lt;b&gt;plane&lt;/b&gt;' 'car&amp;truck' '&quot;quoted&quot;'; do
  grep -qF "$text" cifar_run/report.html || { echo "FAIL: class name not escaped as $text"; exit 1; }
done
if grep -qF '<b>plane' cifar_run/report.html; then echo "FAIL: raw class name in the page"; exit 1; fi
echo "ok: class names escaped"
url="file://$page?report=file://$PWD/run%3Ci%3E%26x/report.html&epochs=$epochs&classes=$classes"
# --virtual-time-budget lets the frame load and the check run before the DOM is dumped.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$PWD/chromium-profile" --allow-file-access-from-files \
  --virtual-time-budget=10000 --dump-dom "$url" >dom.html 2>chromium.log || true
verdict=$(grep -o '<pre id="verdict">[^<]*' dom.html | sed 's/.*>//' || true)
echo "verdict: $verdict"
case "$verdict" in
  PASS*) echo "ok: report.html renders its charts" ;;
  *) tail -5 chromium.log; exit 1 ;;
esac
