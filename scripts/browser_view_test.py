#!/usr/bin/env python3
"""Drives `h2htalk view` in headless Chromium through the DevTools Protocol, as a person would: open
the runs, filter, search a Chinese phrase, page forward and back, open an item, compare runs side by
side, rate three items with the keyboard, reload and find the ratings kept; model text built to break
out of HTML stays text; no console errors; a screenshot of each page, checked not blank.

usage: browser_view_test.py BASE_URL STORE_DB SET_NAME HOSTILE_ITEM_PATH [--shots DIR] [--chromium PATH]
(HOSTILE_ITEM_PATH: /item/RUN/SCENARIO of an answer holding markup; scripts/browser-test.sh plants it.)
"""

import argparse
import base64
import pathlib
import shutil
import sqlite3
import sys
import tempfile
import time

from browser_test import FAILURES, PASSED, check, close, launch, screenshot_ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("db")
    ap.add_argument("set")
    ap.add_argument("hostile")
    ap.add_argument("--shots", default=None)
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    args = ap.parse_args()
    base = args.base.rstrip("/")
    shots = pathlib.Path(args.shots or tempfile.mkdtemp(prefix="h2htalk-view-shots-"))
    shots.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    proc, cdp, profile = launch(args.chromium, shots, loopback=True)

    def go(url, wait_for="document.readyState === 'complete'"):
        cdp.call("Page.navigate", {"url": url})
        t0 = time.time()
        while time.time() - t0 < 60:
            try:
                if cdp.eval(wait_for):
                    return True
            except RuntimeError:
                pass  # the page is being replaced
            cdp.pump(0.1)
        return False

    def settle(expression):
        """Waits for a navigation started by a click or a submit to land."""
        t0 = time.time()
        while time.time() - t0 < 60:
            cdp.pump(0.2)
            try:
                if cdp.eval(expression):
                    return True
            except RuntimeError:
                pass
        return False

    def shot(name):
        data = cdp.call("Page.captureScreenshot", {"format": "png"})["data"]
        path = shots / f"view-{name}.png"
        path.write_bytes(base64.b64decode(data))
        screenshot_ok(path, f"viewer {name}")

    def press(key, code, vk, text):
        cdp.call("Input.dispatchKeyEvent", {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk,
                                            "text": text})
        cdp.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk})

    def rows():
        return cdp.eval("[...document.querySelectorAll('#items tr.row')].map(r => r.dataset.run + '/' + r.dataset.scenario)")

    try:
        # Runs.
        check("the runs page opens", go(base + "/"))
        runs = db.execute("select count(*) from runs").fetchone()[0]
        shown = cdp.eval("document.querySelectorAll('#runs tbody tr').length")
        check("every run is listed", shown == runs, f"{shown} of {runs}")
        shot("runs")

        # Filter through the form: one sub-task.
        check("the items page opens", go(base + "/items"))
        first = rows()
        check("the first page holds 50 items", len(first) == 50, f"{len(first)}")
        cdp.eval("document.querySelector('#filters select[name=task]').value = 'dialogue_emotion'; "
                 "document.getElementById('filters').submit(); true")
        settle("location.search.includes('task=dialogue_emotion') && document.readyState === 'complete'")
        tasks = cdp.eval("[...document.querySelectorAll('#items tr.row td:nth-child(3)')].map(td => td.textContent)")
        check("the sub-task filter keeps only that sub-task", tasks and set(tasks) == {"dialogue_emotion"}, f"{set(tasks or [])}")
        shot("filtered")

        # Page forward and back.
        check("the items page opens again", go(base + "/items"))
        cdp.eval("document.getElementById('next').click(); true")
        settle("location.search.includes('after=') && document.readyState === 'complete'")
        second = rows()
        check("next gives the following 50 items", len(second) == 50 and not set(second) & set(first))
        cdp.eval("document.getElementById('prev').click(); true")
        settle("location.search.includes('before=') && document.readyState === 'complete'")
        check("previous gives the first page back", rows() == first)

        # Search a Chinese phrase taken from a stored answer.
        texts = [r[0] for r in db.execute("select text from generations where status = 'generated' limit 400")]
        cjk = lambda c: "\u4e00" <= c <= "\u9fff"
        phrase = next(t[i:i + 4] for t in texts[37:] for i in range(len(t) - 4) if all(cjk(c) for c in t[i:i + 4]))
        holding = {f"{r}/{s}" for r, s in db.execute(
            "select i.run_id, i.scenario_id from items i left join generations g on g.run_id = i.run_id and "
            "g.scenario_id = i.scenario_id where g.text like ?1 or i.prompt like ?1 or i.reference like ?1",
            (f"%{phrase}%",))}
        check("the items page opens for a search", go(base + "/items"))
        cdp.eval(f"document.getElementById('q').value = {phrase!r}; document.getElementById('filters').submit(); true")
        settle("location.search.includes('q=') && document.readyState === 'complete'")
        found = rows()
        check(f"searching {phrase} finds the items that hold it, and only those",
              0 < len(found) == min(50, len(holding)) and set(found) <= holding,
              f"{len(found)} rows, {len(holding)} items hold it, {len(set(found) - holding)} that do not")
        shot("search")

        # Open an item, then its side-by-side view.
        cdp.eval("document.querySelector('#items a.open').click(); true")
        settle("location.pathname.startsWith('/item/') && document.readyState === 'complete'")
        sections = cdp.eval("['messages', 'answer', 'reference', 'metrics'].every(id => document.getElementById(id))")
        check("the item page shows messages, answer, reference and metrics", bool(sections))
        shot("item")
        has_side = cdp.eval("!!document.getElementById('side')")
        if check("the item page links to other runs' answers", bool(has_side)):
            cdp.eval("document.getElementById('side').click(); true")
            settle("location.pathname === '/side' && document.readyState === 'complete'")
            cols = cdp.eval("document.querySelectorAll('#columns .column').length")
            check("side by side shows a column per run", cols and cols >= 2, f"{cols}")
            shot("side")

        # Hostile model text stays text.
        check("the planted item opens", go(base + args.hostile))
        inert = cdp.eval("document.querySelectorAll('img, script:not([src]), iframe').length === 0 && "
                         "![...document.querySelectorAll('a')].some(a => a.href.startsWith('javascript:')) && "
                         "document.getElementById('answer').textContent.includes('</script>')")
        dialogs = [e for e in cdp.events if e.get("method") == "Page.javascriptDialogOpening"]
        check("markup in an answer is shown as text and runs nothing", bool(inert) and not dialogs)

        # Rate three items with the keyboard; reload; the ratings are kept.
        check("the rating start page opens", go(f"{base}/annotate/{args.set}"))
        cdp.eval("document.querySelector('#rater input[name=rater]').value = 'web-rater'; "
                 "document.getElementById('rater').submit(); true")
        settle("location.pathname.endsWith('/rate') && document.readyState === 'complete'")
        shot("rate")
        for k in range(3):
            item = cdp.eval("document.querySelector('#rating input[name=item]').value")
            n = cdp.eval("document.querySelectorAll('#rating input.score').length")
            for _ in range(n):
                press("7", "Digit7", 55, "7")
            values = cdp.eval("[...document.querySelectorAll('#rating input.score')].map(i => i.value)")
            check(f"keys score item {k + 1} on every criterion", values == ["7"] * n and n > 0, f"{values}")
            press("Enter", "Enter", 13, "\r")
            settle(f"document.readyState === 'complete' && (!document.querySelector('#rating input[name=item]') || "
                   f"document.querySelector('#rating input[name=item]').value !== {item!r})")
        cdp.call("Page.reload")
        settle("document.readyState === 'complete' && !!document.getElementById('progress')")
        progress = cdp.eval("document.getElementById('progress').textContent")
        check("after a reload the rater's progress counts three items", "3 of" in (progress or ""), progress)
        stored = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True).execute(
            "select count(distinct item), min(value), max(value) from human_ratings where set_name = ? and rater = 'web-rater'",
            (args.set,)).fetchone()
        check("three items' ratings are in the store", stored == (3, 7.0, 7.0), f"{stored}")

        errors = [e for e in cdp.events if e.get("method") == "Runtime.exceptionThrown"
                  or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
        check("no console errors or exceptions", not errors, str(errors[:3]))
    finally:
        close(proc, cdp, profile)
    print(f"screenshots in {shots}")
    print(f"viewer browser test: {len(PASSED)} passed, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
