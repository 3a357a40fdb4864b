#!/usr/bin/env bash
# Builds the web demo (web/demo: Coin walk, saving to IndexedDB) into a folder of static
# files, and with `serve` serves it on http://localhost:8000 (PORT to change it).
#
#   scripts/web-demo.sh [build|serve|harness]     (default: serve)
#
# `harness` builds the page of the browser bench and the kill test instead (web/harness, the
# same pipeline), into $WEB_HARNESS_OUT, default <target dir>/web-harness.
#
# Needs the wasm32-unknown-unknown target and wasm-bindgen-cli at the version Cargo.lock
# pins (scripts/test.sh installs both).
# The page goes to $WEB_DEMO_OUT, default <target dir>/web-demo.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir=${CARGO_TARGET_DIR:-target}
crate=savegame-web-demo
static=web/demo/static
out=${WEB_DEMO_OUT:-$target_dir/web-demo}
if [ "${1:-serve}" = harness ]; then
    crate=savegame-web-harness
    static=web/harness/static
    out=${WEB_HARNESS_OUT:-$target_dir/web-harness}
fi
module=${crate//-/_}

# The wasm-release profile (Cargo.toml): the release build, optimised for size, with LTO.
cargo build --profile wasm-release --target wasm32-unknown-unknown -p "$crate"
rm -rf "$out"
mkdir -p "$out/pkg"
wasm-bindgen --target web --no-typescript --out-dir "$out/pkg" \
    "$target_dir/wasm32-unknown-unknown/wasm-release/$module.wasm"
# wasm-opt shrinks the module, where a recent one is at hand: binaryen 116 or newer (older
# ones, such as Debian's 108, break wasm-bindgen's externref table). scripts/test.sh installs
# binaryen from the npm registry into the target folder when none is.
wasm_opt=""
for candidate in ${WASM_OPT:-} wasm-opt "$target_dir/tools/binaryen/node_modules/.bin/wasm-opt"; do
    version=$("$candidate" --version 2>/dev/null | sed -n 's/^wasm-opt version \([0-9]*\).*/\1/p' || true)
    if [ -n "$version" ] && [ "$version" -ge 116 ]; then
        wasm_opt=$candidate
        break
    fi
done
if [ -n "$wasm_opt" ]; then
    "$wasm_opt" -Oz --strip-debug --strip-producers \
        -o "$out/pkg/${module}_bg.wasm" "$out/pkg/${module}_bg.wasm"
else
    echo "no wasm-opt 116 or newer: the module is not shrunk further"
fi
cp "$static"/* "$out/"
echo "$crate's page in $out ($(wc -c <"$out/pkg/${module}_bg.wasm") bytes of wasm)"

if [ "${1:-serve}" = serve ]; then
    port=${PORT:-8000}
    echo "serving on http://localhost:$port/ (Ctrl-C to stop)"
    exec python3 -m http.server --bind 127.0.0.1 --directory "$out" "$port"
fi
