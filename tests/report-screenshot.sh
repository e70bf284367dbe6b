#!/usr/bin/env bash
# report-screenshot.sh REPORT.html OUT.png [HEIGHT] - renders a report in
# headless Chromium (Debian's chromium package), writes a screenshot, and
# fails if the page logged anything to the console (errors, blocked fetches).
set -euo pipefail
page=$(realpath "$1"); out=$2; height=${3:-3000}
profile=$(mktemp -d)
log=$(mktemp)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
  --enable-logging=stderr --v=0 --window-size=1400,"$height" --screenshot="$out" "file://$page" 2> "$log" >/dev/null
rm -rf "$profile"
if grep -E "CONSOLE|Uncaught|net::ERR" "$log"; then
  echo "report-screenshot: the page logged to the console (above)" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
echo "report-screenshot: $out (no console messages)"
