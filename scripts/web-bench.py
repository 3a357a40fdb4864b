#!/usr/bin/env python3
"""The browser bench's driver: opens the harness page (built by `scripts/web-demo.sh harness`) in
headless Chromium and runs its bench, then prints each figure and its ratio to the floor.

    scripts/web-bench.py DIR [--reps N] [--sizes 1,10] [--path page|worker|both]

Run it through scripts/web-bench.sh, which builds the page first.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--sizes", default="1,10")
    p.add_argument("--path", default="both", choices=["page", "worker", "both"])
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    paths = ["page", "worker"] if a.path == "both" else [a.path]
    server = chromium.Server(a.dir)
    driver = chromium.Driver()
    profile = tempfile.mkdtemp(prefix="savegame-bench-")
    browser = None
    try:
        browser = chromium.Browser(driver, os.path.join(profile, "p"))
        browser.go(server.url("index.html"))
        chromium.wait_ready(browser)
        print(f"{browser.js('return navigator.userAgent;')}")
        print(f"{a.reps} rounds of each; medians; ratio = median / median of the floor; "
              "block = the longest gap of a 0 ms timer set again and again on the page (at least 4 ms: the browser's clamp) during one operation")
        for path in paths:
            got = browser.js_async(
                "const done = arguments[arguments.length - 1];"
                "window.harness.bench(arguments[0], arguments[1], arguments[2])"
                ".then(r => done({ok: r}), e => done({err: String(e)}));",
                sizes, a.reps, path == "worker", timeout=1800)
            if "err" in got:
                print(f"FAIL ({path}): {got['err']}")
                for line in browser.console():
                    print(f"console: {line}")
                return 1
            for f in json.loads(got["ok"]):
                med = {k: statistics.median(s["ms"] for s in f[k])
                       for k in ("save", "floor_save", "load", "floor_load")}
                block = {k: max(s["block_ms"] for s in f[k]) for k in ("save", "floor_save")}
                stretches = sorted(s["stretch_ms"] for s in f["save"])
                stretch = stretches[-1]
                capture = max(s["capture_ms"] for s in f["save"])
                gaps = sorted(s["block_ms"] for s in f["save"])
                print(f"{f['megabytes']:>3} MB world ({f['file_bytes']} bytes), {f['path']}: "
                      f"save {med['save']:.0f} ms vs floor {med['floor_save']:.0f} ms "
                      f"= {med['save'] / med['floor_save']:.2f}x; "
                      f"load {med['load']:.0f} ms vs floor {med['floor_load']:.0f} ms "
                      f"= {med['load'] / med['floor_load']:.2f}x; "
                      f"longest block per save {block['save']:.1f} ms "
                      f"(timer gaps {', '.join(f'{g:.1f}' for g in gaps)}; the save's own "
                      f"longest stretch {stretch:.1f} ms (each save's: "
                      f"{', '.join(f'{x:.1f}' for x in stretches)}); the game's capture before it "
                      f"{capture:.1f} ms) "
                      f"(floor's {block['floor_save']:.1f} ms); the floor's parts: capture, "
                      f"encode and seal {statistics.median(f['seal_ms']):.0f} ms, "
                      f"put {statistics.median(f['put_ms']):.0f} ms, "
                      f"get {statistics.median(f['get_ms']):.0f} ms; the timer's longest gap "
                      f"while the page idled 300 ms: "
                      f"{', '.join(f'{x:.1f}' for x in sorted(f['idle_block_ms']))}; "
                      f"idling beside a worker that keeps a core busy: "
                      f"{', '.join(f'{x:.1f}' for x in sorted(f['busy_block_ms']))}")
        return 0
    finally:
        if browser:
            browser.quit()
        driver.close()
        server.close()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
