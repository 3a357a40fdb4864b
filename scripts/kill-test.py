#!/usr/bin/env python3
"""The browser's crash test: savegame-web's saves against a killed browser, a closed tab and a
full quota, in headless Chromium (the harness page, built by `scripts/web-demo.sh harness`).

    scripts/kill-test.py DIR [--kills 50] [--seed N]

1. Storage pressure: the origin gets a small quota (DevTools' Storage.overrideQuotaForOrigin),
   the page saves, fills the quota with a blob in another database, saves again: a typed quota
   error, the previous save loads, and once the blob is gone a save goes through. On the page's
   path and the save worker's.
2. Kills: Chromium runs on one persistent profile (--user-data-dir), in a process group of its
   own. The page loads the slot and says which generation it found, then saves generation
   after generation, each awaited, saying so before (`saving`) and after (`saved`: it returned
   Ok). Once a save is under way (a `saving` report), the driver waits a random 0-250 ms and
   SIGKILLs the whole process group, restarts Chromium on the same profile, and the page loads:
   the generation it finds must be the last one reported saved, or a newer one. Rounds
   alternate between saves through the save worker and saves on the page.
3. A tab closed mid-save (Target.closeTarget right after a `saving` report), on each path: the
   previous save loads in a new tab.

Exits 1 if any saved generation was lost. Every wait is for the thing itself, bounded by
SAVEGAME_TEST_WAIT_SECS (default 120); the kill moments are random, printed with the seed.

One loss is Chromium's, not the library's, and is counted apart: a SIGKILL can tear the write
Chromium's LevelDB was making (the kernel stops a write between pages for a fatal signal), and
on the next start Chromium finds a checksum mismatch, deletes the origin's whole IndexedDB
database and logs "IndexedDB recovering from a corrupted (and deleted) database". Every
database of the origin is gone then, whatever wrote it. A round whose load finds less than was
saved counts as Chromium's only when the slot is empty and that line is in the browser's log
since its start; the test still fails if that happens in more than one round in ten.
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chromium  # noqa: E402

DB = "kill-test"
# Chromium's log line when it deleted an origin's IndexedDB it found corrupt on opening it.
WIPED = b"IndexedDB recovering from a corrupted (and deleted) database"
# Chromium's errors in its log (the profile's .log), where WIPED is looked for.
LOGGING = ("--enable-logging=stderr",)


class Reports:
    """What the page told the server, in order, read as it comes."""

    def __init__(self, server):
        self.server = server
        self.seen = []

    def poll(self):
        for path, body in self.server.take():
            kind = path.rsplit("/", 1)[-1]
            if kind == "error":
                raise AssertionError(f"the page failed: {body}")
            self.seen.append((kind, body))
        return self.seen

    def wait(self, what, pred):
        def found():
            for kind, body in self.poll():
                if pred(kind, body):
                    return (kind, body)
            return None
        return chromium.wait_for(what, found)

    def max_of(self, kind):
        return max((int(b) for k, b in self.poll() if k == kind), default=0)

    def clear(self):
        self.poll()
        self.seen = []


def start_loop(browser, url, worker):
    browser.go(url)
    chromium.wait_ready(browser)
    browser.js("window.harness.kill_loop(arguments[0], arguments[1]).catch(() => {}); return 1;",
               DB, worker)


def loaded(reports):
    _, body = reports.wait("the page's load", lambda k, b: k == "loaded")
    return json.loads(body)


def quota(driver, server, profile):
    browser = chromium.Browser(driver, profile)
    try:
        url = server.url("index.html")
        browser.go(url)
        chromium.wait_ready(browser)
        origin = url.rsplit("/", 1)[0]
        for worker in (False, True):
            browser.cdp("Storage.overrideQuotaForOrigin",
                        {"origin": origin, "quotaSize": 24 * 1024 * 1024})
            got = browser.js_async(
                "const done = arguments[arguments.length - 1];"
                "window.harness.quota_test(arguments[0])"
                ".then(r => done({ok: r}), e => done({err: String(e)}));", worker)
            browser.cdp("Storage.overrideQuotaForOrigin", {"origin": origin})
            if "err" in got:
                raise AssertionError(f"storage pressure ({'worker' if worker else 'page'}): "
                                     f"{got['err']}")
            seen = json.loads(got["ok"])
            print(f"storage pressure, {'worker' if worker else 'page'} path: a quota of 24 MB "
                  f"filled with {seen['filled_bytes']} bytes of blobs; the save failed with "
                  f"\"{seen['error']}\"; the previous save loaded; after freeing space the "
                  f"next save went through (persist() gave {seen['persisted']})")
    finally:
        browser.quit()


def log_since(browser, offset):
    """What the browser logged from `offset` of its log file on."""
    with open(browser.log.name, "rb") as f:
        f.seek(offset)
        return f.read()


def kills(driver, server, profile, count, rng, lost, wiped):
    reports = Reports(server)
    url = server.url("index.html")
    saved = 0
    mid_save = 0
    for round_ in range(count + 1):
        worker = round_ % 2 == 0
        log = chromium.log_path(profile)
        offset = os.path.getsize(log) if os.path.exists(log) else 0
        browser = chromium.Browser(driver, profile, LOGGING)
        try:
            reports.clear()
            start_loop(browser, url, worker)
            found = loaded(reports)
            if found["generation"] < saved:
                # Chromium's deletion empties the whole origin: a slot that still has a save
                # lost something of the library's.
                if found["generation"] == 0 and WIPED in log_since(browser, offset):
                    wiped.append(f"round {round_}: generation {saved} was saved; Chromium "
                                 f"found its IndexedDB files corrupt after the kill and deleted "
                                 f"the origin's database; {found['generation']} loaded")
                    saved = found["generation"]
                else:
                    lost.append(f"round {round_}: generation {saved} was saved, "
                                f"{found['generation']} loaded")
            if round_ == count:
                browser.quit()
                break
            start = found["generation"]
            reports.wait("a save under way",
                         lambda k, b, start=start: k == "saving" and int(b) > start)
            time.sleep(rng.uniform(0, 0.25))
        finally:
            # The kill itself, and on a failure the browser is not left running.
            if browser.alive():
                browser.kill()
        last_saving, last_saved = reports.max_of("saving"), reports.max_of("saved")
        if last_saving > last_saved:
            mid_save += 1
        saved = max(saved, last_saved)
    return saved, mid_save


def tab_close(driver, server, profile, lost):
    """Closes the saving tab right after it says a save began, on each path; the previous save
    must load in a new tab. A close that lands after the save completed (the save was quicker
    than the close) is tried again, up to 5 times."""
    reports = Reports(server)
    url = server.url("index.html")
    browser = chromium.Browser(driver, profile)
    try:
        for worker in (True, False):
            path = "worker" if worker else "page"
            for attempt in range(1, 6):
                reports.clear()
                start_loop(browser, url, worker)
                start = loaded(reports)["generation"]
                reports.wait("a save that returned Ok",
                             lambda k, b, start=start: k == "saved" and int(b) > start)
                targets = browser.cdp("Target.getTargets")["targetInfos"]
                page = next(t for t in targets
                            if t["type"] == "page" and t["url"].startswith(url))
                # The tab that takes over, made first: the close follows the evidence at once.
                browser.cdp("Target.createTarget", {"url": "about:blank"})
                seen = len(reports.poll())
                reports.wait("the next save under way",
                             lambda k, b, seen=seen: k == "saving" and len(reports.seen) > seen)
                browser.cdp("Target.closeTarget", {"targetId": page["targetId"]})
                saved, closing = reports.max_of("saved"), reports.max_of("saving")
                chromium.wait_for("the tab to close", lambda: len(
                    chromium.call(driver.base, "GET", browser.s + "/window/handles")) == 1)
                handle = chromium.call(driver.base, "GET", browser.s + "/window/handles")[0]
                browser.post("/window", {"handle": handle})
                reports.clear()
                start_loop(browser, url, worker)
                found = loaded(reports)["generation"]
                if found < saved:
                    lost.append(f"tab closed ({path}): generation {saved} was saved, "
                                f"{found} loaded")
                during = closing > saved
                print(f"tab closed {'while saving' if during else 'after saving'} generation "
                      f"{closing} ({path} path, attempt {attempt}): generation {found} loaded "
                      f"(the last reported saved: {saved})")
                if during:
                    break
    finally:
        browser.quit()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--kills", type=int, default=50)
    p.add_argument("--seed", type=int, default=None)
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    began = time.time()
    server = chromium.Server(a.dir)
    driver = chromium.Driver()
    root = tempfile.mkdtemp(prefix="savegame-kill-")
    lost = []
    wiped = []
    try:
        quota(driver, server, os.path.join(root, "quota"))
        saved, mid_save = kills(driver, server, os.path.join(root, "profile"), a.kills, rng,
                                lost, wiped)
        tab_close(driver, server, os.path.join(root, "profile"), lost)
    finally:
        driver.close()
        server.close()
        shutil.rmtree(root, ignore_errors=True)
    for line in wiped:
        print(f"CHROMIUM DELETED ITS DATABASE: {line}")
    for line in lost:
        print(f"LOST: {line}")
    too_many = len(wiped) > max(1, a.kills // 10)
    if too_many:
        print(f"FAILED: Chromium deleted the origin's database in {len(wiped)} of {a.kills} "
              f"rounds, more than one in ten")
    print(f"kill test: {a.kills} kills of the whole browser (seed {seed}; {mid_save} with a save "
          f"under way), the last saved generation {saved}; {len(lost)} lost; "
          f"{len(wiped)} deleted by Chromium; {time.time() - began:.0f} s")
    return 1 if lost or too_many else 0


if __name__ == "__main__":
    sys.exit(main())
