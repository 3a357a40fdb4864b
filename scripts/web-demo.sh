#!/usr/bin/env bash
# Builds the web demo (web/demo: Coin walk, saving to IndexedDB) into a folder of static
# files, and with `serve` serves it on http://localhost:8000 (PORT to change it).
#
#   scripts/web-demo.sh [build|serve]     (default: serve)
#
# Needs the wasm32-unknown-unknown target and wasm-bindgen-cli at the version Cargo.lock
# pins (scripts/test.sh installs both). wasm-opt, where installed, shrinks the module.
# The page goes to $WEB_DEMO_OUT, default <target dir>/web-demo.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir=${CARGO_TARGET_DIR:-target}
out=${WEB_DEMO_OUT:-$target_dir/web-demo}

cargo build --release --target wasm32-unknown-unknown -p savegame-web-demo
rm -rf "$out"
mkdir -p "$out/pkg"
wasm-bindgen --target web --no-typescript --out-dir "$out/pkg" \
    "$target_dir/wasm32-unknown-unknown/release/savegame_web_demo.wasm"
if command -v wasm-opt >/dev/null 2>&1; then
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
        --enable-sign-ext --enable-mutable-globals \
        -o "$out/pkg/savegame_web_demo_bg.wasm" "$out/pkg/savegame_web_demo_bg.wasm"
fi
cp web/demo/static/index.html "$out/"
echo "web demo in $out ($(wc -c <"$out/pkg/savegame_web_demo_bg.wasm") bytes of wasm)"

if [ "${1:-serve}" = serve ]; then
    port=${PORT:-8000}
    echo "serving on http://localhost:$port/ (Ctrl-C to stop)"
    exec python3 -m http.server --bind 127.0.0.1 --directory "$out" "$port"
fi
