#!/usr/bin/env python3
"""The web demo's screenshot test: headless Chromium, driven through chromedriver's WebDriver
API, opens the built page with ?script (moves, a save, an autosave, more moves, a load of the
save), waits until the page says how that went, takes a screenshot, and checks the page state
from the DOM: the verdict, the load menu's entries (labels and times, and each save's
thumbnail decoded as a 60x60 picture), that the saves went through the save worker, that the
page's animation ran, and the status line. It checks the DOM, never pixels.

    scripts/page-test.py DIR SCREENSHOT.png

DIR is the page built by scripts/web-demo.sh. Needs python3 (stdlib only), chromium and
chromedriver (CHROMIUM, CHROMEDRIVER to point elsewhere). Each wait (for chromedriver to
answer, for the page's verdict) is for the thing itself, bounded by SAVEGAME_TEST_WAIT_SECS
(default 120), as the Rust tests' waits are.
"""

import base64
import functools
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_SECS = float(os.environ.get("SAVEGAME_TEST_WAIT_SECS") or 120)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(directory):
    """A static file server on a free loopback port, in a thread."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chromium import call  # noqa: E402  (the WebDriver call the other browser scripts make)


def main():
    directory, shot = sys.argv[1], sys.argv[2]
    server = serve(directory)
    page = f"http://127.0.0.1:{server.server_port}/index.html?script"
    port = free_port()
    driver = subprocess.Popen([CHROMEDRIVER, f"--port={port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    profile = tempfile.mkdtemp(prefix="savegame-page-")
    session = None
    try:
        deadline = time.time() + WAIT_SECS
        while True:
            try:
                call(base, "GET", "/status", timeout=2)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"goog:loggingPrefs": {"browser": "ALL"},
                                                 "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-quic", "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync",
                     "--window-size=1000,700", f"--user-data-dir={profile}"]}}}}
        session = call(base, "POST", "/session", caps, timeout=WAIT_SECS)["sessionId"]
        s = f"/session/{session}"
        call(base, "POST", s + "/url", {"url": page})

        def js(script):
            try:
                return call(base, "POST", s + "/execute/sync", {"script": script, "args": []})
            except urllib.error.HTTPError as e:
                return f"(the page could not be read: {e})"

        verdict = None
        deadline = time.time() + WAIT_SECS
        while time.time() < deadline:
            verdict = js("return (document.body && document.body.dataset.script) || null;")
            if verdict:
                break
            time.sleep(0.2)
        png = base64.b64decode(call(base, "GET", s + "/screenshot"))
        with open(shot, "wb") as f:
            f.write(png)
        status = js("return document.getElementById('status')?.textContent ?? null;")
        menu = js("return Array.from(document.querySelectorAll('#menu li'))"
                  ".map(li => li.textContent);")
        thumbs = js("return Array.from(document.querySelectorAll('#menu li'))"
                    ".map(li => { const i = li.querySelector('img.thumb');"
                    " return i ? [i.complete, i.naturalWidth, i.naturalHeight] : null; });")
        saver = js("return document.body.dataset.saver || null;")
        frames = js("return Number(document.body.dataset.frames || 0);")
        print(f"screenshot: {shot} ({len(png)} bytes)")
        print(f"saves made by: {saver}; frames drawn: {frames}; thumbnails: {thumbs}")
        print(f"status: {status}")
        for entry in menu or []:
            print(f"menu: {entry}")

        failures = []
        if verdict != "passed":
            failures.append(f"the scripted session did not pass: {verdict!r}")
        if not png.startswith(b"\x89PNG"):
            failures.append("the screenshot is not a PNG")
        time_re = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC"
        wanted = [(r"^slot 1 · 3 coins, 6 moves · " + time_re, "the save in slot 1"),
                  (r"^autosave 1 · 4 coins, 8 moves · " + time_re, "the autosave")]
        for pattern, what in wanted:
            if not any(re.search(pattern, entry or "") for entry in menu or []):
                failures.append(f"the load menu does not show {what}: {menu}")
        if not isinstance(thumbs, list) or len(thumbs) < 2 or any(
                t != [True, 60, 60] for t in thumbs):
            failures.append(f"a save of the menu has no 60x60 thumbnail: {thumbs}")
        if saver != "worker":
            failures.append(f"the saves did not go through the save worker: {saver!r}")
        if not isinstance(frames, (int, float)) or frames < 1:
            failures.append(f"the page's animation drew no frame: {frames!r}")
        if not status or "Loaded slot 1: 3 coins, 6 moves" not in status:
            failures.append(f"the status line does not report the load: {status!r}")
        for failure in failures:
            print(f"FAIL: {failure}")
        if failures:
            try:
                for entry in call(base, "POST", s + "/se/log", {"type": "browser"}) or []:
                    print(f"browser console: {entry.get('level')}: {entry.get('message')}")
            except OSError as e:
                print(f"(the browser's console could not be read: {e})")
        print(f"page: {1 if not failures else 0} passed, {1 if failures else 0} failed")
        return 1 if failures else 0
    finally:
        if session:
            try:
                call(base, "DELETE", f"/session/{session}")
            except OSError:
                pass
        driver.terminate()
        driver.wait(timeout=10)
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
