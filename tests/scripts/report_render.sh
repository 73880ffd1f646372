#!/usr/bin/env bash
# Renders a search report in headless Chromium: the page must load with no
# console errors, hold every plot, and give a screenshot. Exits 77 (CTest
# SKIP_RETURN_CODE) when no chromium is installed.
#   report_render.sh SHARDSIM SCENARIO WORKDIR
set -euo pipefail
bin=$1 scenario=$2 work=$3
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "chromium not found: skipping"
  exit 77
fi
mkdir -p "$work"
rm -f "$work/report.html" "$work/report.png"
"$bin" search "$scenario" --max-simulations 4 --report "$work/report.html" > /dev/null
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --user-data-dir="$work/profile")
# The DOM after load: every plot present.
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$work/report.html" > "$work/dom.html" 2> /dev/null
for id in breakdown timeline memory roofline plans; do
  if ! grep -q "<svg id=\"$id\"" "$work/dom.html"; then
    echo "plot \"$id\" missing from the rendered page"
    exit 1
  fi
done
# Console messages go to stderr with --enable-logging; any console error fails.
timeout 120 "$browser" "${flags[@]}" --enable-logging=stderr --v=0 --window-size=1400,3200 \
  --screenshot="$work/report.png" "file://$work/report.html" > /dev/null 2> "$work/console.log" || true
if grep -E "CONSOLE|Uncaught" "$work/console.log"; then
  echo "console errors while rendering the report"
  exit 1
fi
if [ ! -s "$work/report.png" ]; then
  echo "no screenshot was written"
  exit 1
fi
# The comparison page of shardsim compare (fixtures of the compare goldens).
fixtures=$(cd "$(dirname "$0")/../golden/commands" && pwd)
"$bin" compare "$fixtures/compare_predicted.json" "$fixtures/compare_measured.json" --report "$work/compare.html" \
  > /dev/null
timeout 120 "$browser" "${flags[@]/profile/profile-compare}" --dump-dom "file://$work/compare.html" \
  > "$work/compare_dom.html" 2> /dev/null
if ! grep -q '<svg id="comparison"' "$work/compare_dom.html"; then
  echo "plot \"comparison\" missing from the rendered compare page"
  exit 1
fi
echo "rendered: $work/report.png ($(stat -c %s "$work/report.png") bytes) and the compare page"
