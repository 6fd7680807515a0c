#!/usr/bin/env python3
"""Prints how long headless Chromium takes to render a report: from the navigation's start to the
page's load event, to the transcript viewer's script being ready (`body.dataset.ready`), and to the
first frame drawn after that (laid out and painted), in seconds, as measured by the page itself
(Navigation Timing, performance.now()), without Chromium's own start-up.

usage: page_load.py REPORT_HTML [--chromium PATH]   (needs websockets: scripts/browser-test.sh's venv)
"""

import argparse
import pathlib
import shutil
import sys
import tempfile
import time

from browser_test import close, launch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    args = ap.parse_args()
    shots = pathlib.Path(tempfile.mkdtemp(prefix="h2htalk-load-"))
    proc, cdp, profile = launch(args.chromium, shots)
    try:
        cdp.call("Page.navigate", {"url": pathlib.Path(args.report).resolve().as_uri()})
        t0 = time.time()
        while time.time() - t0 < 300:
            try:
                if cdp.eval("document.readyState === 'complete' && document.body.dataset.ready === '1'"):
                    break
            except RuntimeError:
                pass
            cdp.pump(0.05)
        t = cdp.eval("(() => { const n = performance.getEntriesByType('navigation')[0]; "
                     "return [n.loadEventEnd / 1000, performance.now() / 1000]; })()")
        # The first frame drawn after that: the page laid out and painted (two animation frames).
        painted = cdp.call("Runtime.evaluate", {
            "expression": "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => "
                          "r(performance.now() / 1000))))",
            "awaitPromise": True, "returnByValue": True})["result"]["value"]
        print(f"{t[0]:.2f} {t[1]:.2f} {painted:.2f}")
    finally:
        close(proc, cdp, profile)
        shutil.rmtree(shots, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
