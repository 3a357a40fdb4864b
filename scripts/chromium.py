"""Headless Chromium for the browser scripts (scripts/web-bench.py, scripts/kill-test.py), with
the Python standard library only: a static file server, Chromium started in a process group of
its own (so a test can SIGKILL all of it), chromedriver attached to it, scripts run in the page,
and DevTools protocol commands sent through chromedriver.

CHROMIUM and CHROMEDRIVER point elsewhere than /usr/bin; SAVEGAME_CHROMIUM_FLAGS adds flags
(`--js-flags=--trace-gc`, say). Every wait is for the thing itself,
bounded by SAVEGAME_TEST_WAIT_SECS (default 120).
"""

import functools
import http.server
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_SECS = float(os.environ.get("SAVEGAME_TEST_WAIT_SECS") or 120)

# Without the background-networking flags, Chromium's own connections are refused by a closed
# network and it stalls; --no-sandbox because CI runs as root.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--window-size=1000,700",
         *os.environ.get("SAVEGAME_CHROMIUM_FLAGS", "").split()]


def wait_for(what, check, secs=None):
    """check() until it returns something other than None/False, at most secs (WAIT_SECS)."""
    deadline = time.time() + (secs or WAIT_SECS)
    while True:
        got = check()
        if got:
            return got
        if time.time() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(0.05)


class Server:
    """A static file server on a free loopback port, in a thread; POSTs to /report/<name> are
    kept, in order, for the test to read (what the page reports)."""

    def __init__(self, directory):
        self.reports = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer.lock:
                    outer.reports.append((self.path, body.decode()))
                self.send_response(204)
                self.end_headers()

        handler = functools.partial(Handler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path}"

    def take(self):
        with self.lock:
            out, self.reports = self.reports, []
            return out

    def close(self):
        self.httpd.shutdown()


def call(base, method, path, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"{}").get("value")


class Driver:
    """chromedriver on a free port; sessions attach to browsers started by Browser."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.proc = subprocess.Popen([CHROMEDRIVER, f"--port={port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"

        def up():
            try:
                call(self.base, "GET", "/status", timeout=2)
                return True
            except OSError:
                return False
        wait_for("chromedriver", up)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def log_path(profile):
    """Where a browser on `profile` writes its log (appended to by every start)."""
    return os.environ.get("SAVEGAME_CHROMIUM_LOG") or profile.rstrip("/") + ".log"


class Browser:
    """Chromium on `profile`, in a process group of its own, with a chromedriver session."""

    def __init__(self, driver, profile, extra=()):
        self.driver = driver
        port_file = os.path.join(profile, "DevToolsActivePort")
        if os.path.exists(port_file):
            os.remove(port_file)
        self.log = open(log_path(profile), "ab")
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, *extra, f"--user-data-dir={profile}", "--remote-debugging-port=0",
             "about:blank"],
            stdout=self.log, stderr=self.log, start_new_session=True)
        self.pgid = self.proc.pid

        def port():
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            try:
                with open(port_file) as f:
                    line = f.readline().strip()
                return line or None
            except OSError:
                return None
        # Chromium runs in a session of its own, so nothing ends it but this object: a start
        # that fails half-way kills what it started before saying so.
        try:
            debugger = f"127.0.0.1:{wait_for('chromium to listen', port)}"
            caps = {"capabilities": {"alwaysMatch": {
                "goog:loggingPrefs": {"browser": "ALL"},
                "goog:chromeOptions": {"debuggerAddress": debugger}}}}
            self.session = call(driver.base, "POST", "/session", caps,
                                timeout=WAIT_SECS)["sessionId"]
            self.s = f"/session/{self.session}"
            call(driver.base, "POST", self.s + "/timeouts", {"script": int(WAIT_SECS * 1000)})
        except BaseException:
            self.kill()
            raise

    def post(self, path, body, timeout=30):
        return call(self.driver.base, "POST", self.s + path, body, timeout=timeout)

    def go(self, url):
        self.post("/url", {"url": url}, timeout=WAIT_SECS)

    def js(self, script, *args):
        return self.post("/execute/sync", {"script": script, "args": list(args)})

    def js_async(self, script, *args, timeout=None):
        """Runs `script` with a callback as its last argument (`arguments[arguments.length-1]`)
        and returns what it calls back with."""
        return self.post("/execute/async", {"script": script, "args": list(args)},
                         timeout=timeout or WAIT_SECS)

    def cdp(self, cmd, params=None):
        return self.post("/goog/cdp/execute", {"cmd": cmd, "params": params or {}})

    def console(self):
        try:
            return [f"{e.get('level')}: {e.get('message')}"
                    for e in self.post("/se/log", {"type": "browser"}) or []]
        except OSError as e:
            return [f"(the console could not be read: {e})"]

    def alive(self):
        try:
            os.killpg(self.pgid, 0)
            return True
        except ProcessLookupError:
            return False

    def kill(self):
        """SIGKILL to every process of the browser's group, then waits until none is left."""
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=WAIT_SECS)
        wait_for("the browser's processes to end", lambda: not self.alive())
        self.log.close()

    def quit(self):
        try:
            call(self.driver.base, "DELETE", self.s, timeout=10)
        except OSError:
            pass
        self.kill()


def wait_ready(browser):
    """Waits until the harness page has loaded its module (body data-ready)."""
    def ready():
        try:
            return browser.js("return document.body && document.body.dataset.ready || null;")
        except urllib.error.HTTPError:
            return None
    return wait_for("the page's module", ready)
