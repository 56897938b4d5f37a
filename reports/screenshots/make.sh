#!/usr/bin/env bash
# The first screens of the GLM-5.1 case (issue 25), as a user sees them: the text report on an
# 80x24 terminal and the HTML report's first viewport, each a PNG taken by headless Chromium.
# Run from the repository root: bash reports/screenshots/make.sh
set -euo pipefail
out=reports/screenshots
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chrome() {  # chrome WIDTHxHEIGHT PNG URL
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$tmp/profile" --hide-scrollbars --window-size="$1" --screenshot="$2" "$3" \
    >/dev/null 2>&1
}
COLUMNS=80 python3 -m auditor scan --config examples/glm5_1_lora_pp4.sh --torch 2.10.0 \
  >"$tmp/scan.txt" || true
python3 - "$tmp/scan.txt" "$tmp/screen.html" <<'PY'
import html, sys
lines = open(sys.argv[1]).read().splitlines()[:24]
body = html.escape("\n".join(lines))
open(sys.argv[2], "w").write(
    "<html><body style='margin:0;background:#111;color:#ddd'><pre style='margin:8px;"
    "font:15px/18px DejaVu Sans Mono,monospace'>" + body + "</pre></body></html>")
PY
chrome 740x450 "$PWD/$out/glm5_1_pp4_text.png" "file://$tmp/screen.html"
python3 -m auditor scan --config examples/glm5_1_lora_pp4.sh --torch 2.10.0 --format html \
  -o "$tmp/report.html" || true
chrome 1280x900 "$PWD/$out/glm5_1_pp4_html.png" "file://$tmp/report.html"
echo "wrote $out/glm5_1_pp4_text.png $out/glm5_1_pp4_html.png"
