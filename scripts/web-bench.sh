#!/usr/bin/env bash
# The browser bench, in one command: builds the harness page (web/harness, the wasm-release
# profile, as the demo page is built) and runs it in headless Chromium (scripts/web-bench.py):
# saves and loads of a 1 MB and a 10 MB encrypted world through savegame-web's IndexedDbSaves,
# each against its floor measured in the same page session, and the longest the page's thread
# was blocked during each save.
#
#   scripts/web-bench.sh [--reps N] [--sizes 1,10] [--path page|worker|both]
#
# A measurement: run it on a quiet machine, never in CI (scripts/test.sh does not).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${WEB_HARNESS_OUT:-${CARGO_TARGET_DIR:-target}/web-harness}
WEB_HARNESS_OUT="$out" scripts/web-demo.sh harness
python3 scripts/web-bench.py "$out" "$@"
