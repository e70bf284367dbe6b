#!/usr/bin/env bash
# report-screenshot.sh REPORT.html OUT.png [WIDTH [HEIGHT]] - renders a report
# in headless Chromium (Debian's chromium package) at WIDTH x HEIGHT CSS
# pixels (default 1400 x 3000), writes a screenshot, and fails if
#   - the page logged anything to the console (errors, blocked fetches), or
#   - anything is clipped at that width: the page scrolls sideways, a
#     figure or table box reaches past the window, or a text of a plot
#     (a title, a tick, a rotated axis label) lies outside its SVG.
# The layout check runs a script in a scratch copy of the page (the report
# itself has none) and reads its verdict from the dumped DOM.
set -euo pipefail
page=$(realpath "$1"); out=$2; width=${3:-1400}; height=${4:-3000}
profile=$(mktemp -d)
log=$(mktemp)
probe=$(dirname "$page")/.layout-probe-$$.html
trap 'rm -rf "$profile" "$log" "$probe"' EXIT
chrome() {
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
    --force-device-scale-factor=1 --window-size="$width,$height" "$@"
}
chrome --enable-logging=stderr --v=0 --screenshot="$out" "file://$page" 2> "$log" >/dev/null
if grep -E "CONSOLE|Uncaught|net::ERR" "$log"; then
  echo "report-screenshot: the page logged to the console (above)" >&2
  exit 1
fi

# the layout check: a copy of the page with a script that writes what is
# clipped into an element the dump shows
{
  sed 's|</body></html>||' "$page"
  cat <<'JS'
<script>
(function () {
  var w = document.documentElement.clientWidth, bad = [];
  if (document.documentElement.scrollWidth > w + 1)
    bad.push("page scrolls sideways: " + document.documentElement.scrollWidth + " > " + w);
  document.querySelectorAll("figure, .scroll, svg").forEach(function (e, i) {
    var r = e.getBoundingClientRect();
    if (r.right > w + 1) bad.push(e.tagName + " #" + i + " reaches " + Math.round(r.right) + " > " + w);
  });
  document.querySelectorAll("svg").forEach(function (s, i) {
    var box = s.getBoundingClientRect(), title = s.querySelector("title");
    s.querySelectorAll("text").forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        bad.push("svg #" + i + " (" + (title ? title.textContent : "") + "): text '" + t.textContent + "' outside it");
    });
  });
  var o = document.createElement("pre");
  o.id = "layout-verdict";
  o.textContent = bad.length ? "CLIPPED\n" + bad.join("\n") : "LAYOUT-OK";
  document.body.appendChild(o);
})();
</script>
JS
  echo '</body></html>'
} > "$probe"
verdict=$(chrome --dump-dom "file://$probe" 2>/dev/null | sed -n '/<pre id="layout-verdict">/,/<\/pre>/p')
if ! grep -q "LAYOUT-OK" <<<"$verdict"; then
  echo "report-screenshot: clipped at $width px:" >&2
  sed -e 's/<[^>]*>//g' <<<"$verdict" | head -40 >&2
  [ -n "$verdict" ] || echo "  (no verdict: the probe did not run)" >&2
  exit 1
fi
echo "report-screenshot: $out at $width px (no console messages, nothing clipped)"
