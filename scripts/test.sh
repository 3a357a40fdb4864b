#!/usr/bin/env bash
# Every test of the workspace, in one command, on a fresh machine or this one:
#
#   scripts/test.sh
#
# 1. Installs what `cargo test` cannot install itself, and reuses what is already there:
#    Debian's chromium and chromium-driver, xvfb and mesa-vulkan-drivers, the rustup target wasm32-unknown-unknown,
#    wasm-bindgen-cli at exactly the wasm-bindgen version of Cargo.lock (kept when
#    `wasm-bindgen --version` already says that version), and binaryen's wasm-opt from the
#    npm registry into the target folder (Debian's is too old for wasm-bindgen's output), and
#    moto's S3 server from PyPI (`moto[server]`, the S3-compatible server the cloud tests
#    start; kept when Python already imports that version of it).
# 2. Runs `cargo test --workspace --all-features` (every native test; cloud/tests/cloud.rs starts
#    moto's server on a localhost port the OS picks itself).
# 3. Runs the Bevy example as a real app (bevy/app: DefaultPlugins, a window under Xvfb,
#    rendering on Mesa's lavapipe), which saves, loads, takes a screenshot and exits.
# 4. Builds the core for wasm32-unknown-unknown, with its default features and with JSON alone.
# 5. Runs the browser tests (web/tests/browser.rs) in headless Chromium.
# 6. Builds the web demo and runs its screenshot test (scripts/page-test.py).
# 7. Builds the harness page (web/harness) and runs the browser's crash test
#    (scripts/kill-test.py): a full quota, 50 SIGKILLs of the whole browser mid-save, and tabs
#    closed mid-save, every save that returned Ok loading afterwards.
#
# SAVEGAME_SKIP_INSTALL=1 skips step 1 (a machine without root or network, set up by hand).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }
took() { printf '   (%s: %ds)\n' "$1" "$(( $(date +%s) - $2 ))"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

target_dir=${CARGO_TARGET_DIR:-target}
# The S3-compatible server of the cloud tests (cloud/tests/cloud.rs, cloud/benches/cloud.rs): moto's,
# which keeps conditional writes atomic under concurrency (s3s-fs 0.14 did not). The same
# version as testkit/src/s3.rs's MOTO_VERSION.
moto_version=5.2.5
wasm_bindgen_version=$(sed -n '/^name = "wasm-bindgen"$/{n;s/^version = "\(.*\)"$/\1/p;}' Cargo.lock)
[ -n "$wasm_bindgen_version" ] || { echo "no wasm-bindgen in Cargo.lock"; exit 1; }

if [ "${SAVEGAME_SKIP_INSTALL:-0}" != 1 ]; then
    step "what the browser tests need"
    missing=()
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
    # The Bevy example as a real app (bevy/app): a virtual X server, and Mesa's Vulkan drivers
    # (lavapipe renders on the CPU where there is no GPU).
    # xvfb-run needs xauth, and the server its base fonts: both only recommended by Debian's
    # xvfb, which an install without recommends leaves out.
    command -v xvfb-run >/dev/null 2>&1 || missing+=(xvfb)
    command -v xauth >/dev/null 2>&1 || missing+=(xauth)
    dpkg -s xfonts-base >/dev/null 2>&1 || missing+=(xfonts-base)
    dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || missing+=(mesa-vulkan-drivers)
    if [ ${#missing[@]} -gt 0 ]; then
        t=$(date +%s)
        echo "installing ${missing[*]} from Debian's packages"
        as_root apt-get update -qq
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
        took "apt-get install ${missing[*]}" "$t"
    else
        echo "chromium, chromedriver, xvfb and mesa-vulkan-drivers: present"
    fi
    if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
        t=$(date +%s)
        rustup target add wasm32-unknown-unknown
        took "rustup target add wasm32-unknown-unknown" "$t"
    else
        echo "rustup target wasm32-unknown-unknown: present"
    fi
    if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $wasm_bindgen_version" ]; then
        t=$(date +%s)
        # Not --locked: the CLI's own lock file names a webpki-roots version this registry
        # lacks. No default features: they are the TLS stack the runner uses only to download
        # a driver, and chromedriver is installed above. --debug: on a fresh 2-core machine it
        # builds in under 2 minutes against 7 to 12 for a release build, and costs the test
        # runs about a minute in all.
        cargo install wasm-bindgen-cli --version "$wasm_bindgen_version" --no-default-features \
            --debug --force
        took "cargo install wasm-bindgen-cli $wasm_bindgen_version" "$t"
    else
        echo "wasm-bindgen-cli $wasm_bindgen_version: present"
    fi
    if ! python3 -c "import importlib.metadata as m, moto.server, werkzeug, flask_cors
assert m.version('moto') == '$moto_version'" 2>/dev/null; then
        t=$(date +%s)
        # A pure-Python wheel and its dependencies: seconds. A Python whose packages the
        # system manages (PEP 668) needs to be told that this is what is wanted.
        python3 -m pip install --quiet "moto[server]==$moto_version" \
            || python3 -m pip install --quiet --break-system-packages "moto[server]==$moto_version"
        took "pip install moto[server] $moto_version" "$t"
    else
        echo "moto $moto_version: present"
    fi
    binaryen="$target_dir/tools/binaryen"
    if [ ! -x "$binaryen/node_modules/.bin/wasm-opt" ] && command -v npm >/dev/null 2>&1; then
        t=$(date +%s)
        mkdir -p "$binaryen"
        npm install --prefix "$binaryen" --no-audit --no-fund --silent binaryen@132.0.0
        took "npm install binaryen@132.0.0 (wasm-opt)" "$t"
    else
        echo "wasm-opt: present (or no npm: the demo is then not shrunk)"
    fi
fi

step "native tests: cargo test --workspace --all-features"
cargo test --workspace --all-features

step "the Bevy example as a real app: DefaultPlugins, a window under Xvfb, rendering (bevy/app)"
# Not a workspace member: Bevy's rendering crates declare rustc 1.97.1 (they build on the
# workspace's 1.95), and take a few minutes to build on their own.
cargo test --ignore-rust-version --manifest-path bevy/app/Cargo.toml

step "the core builds for wasm32-unknown-unknown (default features, then JSON alone)"
cargo build --target wasm32-unknown-unknown -p savegame
cargo build --target wasm32-unknown-unknown -p savegame --no-default-features --features json
# The compression and codec features a browser can have (zstd needs a C compiler for wasm32).
cargo build --target wasm32-unknown-unknown -p savegame --features lz4,bitcode

step "browser tests in headless Chromium (web/tests/browser.rs)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver)} \
WASM_BINDGEN_TEST_WEBDRIVER_JSON=$PWD/web/webdriver.json \
WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-300} \
    cargo test --target wasm32-unknown-unknown -p savegame-web -- --nocapture

step "the web page: a scripted save and load, a screenshot, the load menu's text"
out="$target_dir/web-demo"
WEB_DEMO_OUT="$out" scripts/web-demo.sh build
python3 scripts/page-test.py "$out" "$out/screenshot.png"

step "the browser killed mid-save: 50 SIGKILLs, tabs closed, a full quota (scripts/kill-test.py)"
t=$(date +%s)
harness="$target_dir/web-harness"
WEB_HARNESS_OUT="$harness" scripts/web-demo.sh harness
python3 scripts/kill-test.py "$harness" --kills "${SAVEGAME_KILLS:-50}"
took "the browser's crash test" "$t"

echo
echo "every test passed"
