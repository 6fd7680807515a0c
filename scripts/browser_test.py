#!/usr/bin/env python3
"""Opens an h2htalk report.html in headless Chromium (fresh profile, no network) through the Chrome
DevTools Protocol and checks it: no console errors or exceptions, no request leaves the file, the
charts and the transcript viewer render (elements present, a non-blank screenshot), and filtering
and paging work, driven through the real DOM and checked against the data embedded in the file.

usage: browser_test.py REPORT_HTML [--min-items N] [--max-mb MB] [--shots DIR] [--chromium PATH]
Needs the PyPI packages websockets and pillow (scripts/browser-test.sh installs them in a venv).
"""

import argparse
import base64
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from websockets.sync.client import connect
from PIL import Image

FAILURES = []
PASSED = []


def check(name, ok, detail=""):
    (PASSED if ok else FAILURES).append(name)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else f": {detail}"), flush=True)
    return ok


def embedded_json(html, element_id):
    m = re.search(r'<script type="application/json" id="' + element_id + r'">(.*?)</script>', html, re.S)
    if not m:
        raise SystemExit(f"no <script id={element_id}> in the report")
    return json.loads(m.group(1))


class Cdp:
    def __init__(self, ws_url):
        self.ws = connect(ws_url, max_size=None, open_timeout=30)
        self.next_id = 0
        self.events = []

    def call(self, method, params=None, timeout=120):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        deadline = time.time() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.time())))
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def pump(self, seconds):
        end = time.time() + seconds
        while time.time() < end:
            try:
                msg = json.loads(self.ws.recv(timeout=max(0.05, end - time.time())))
            except TimeoutError:
                return
            if "method" in msg:
                self.events.append(msg)

    def eval(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluating {expression[:80]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")


def screenshot_ok(png_path, name):
    img = Image.open(png_path).convert("RGB")
    w, h = img.size
    small = img.resize((max(1, w // 4), max(1, h // 4)))
    pixels = list(small.getdata())
    colors = len(set(pixels))
    background = max(set(pixels), key=pixels.count)
    share = sum(1 for p in pixels if p != background) / len(pixels)
    return check(f"{name} screenshot is not blank", colors >= 20 and share >= 0.03,
                 f"{colors} colours, {share:.1%} of pixels off the background")


def check_assessments(cdp, lb, shots):
    """The assessments section: a block per run, each section either with its figures or saying
    "not run", and the figures shown equal to leaderboard.json."""
    a = lb["assessments"]
    blocks = cdp.eval("[...document.querySelectorAll('#assessments details.assessments')].map(d => d.dataset.run)")
    check("an assessments block per run", blocks and sorted(blocks) == sorted(r["run"] for r in a["runs"]),
          f"{len(blocks or [])} blocks for {len(a['runs'])} runs")
    figs = dict(cdp.eval("[...document.querySelectorAll('#assessments td[data-fig]')].map(td => [td.dataset.fig, td.dataset.value])"))
    not_run = cdp.eval("[...document.querySelectorAll('#assessments details.assessments')].flatMap(d => "
                       "[...d.querySelectorAll('p.not-run')].map(p => d.dataset.run + '|' + p.dataset.section))")
    bad = []
    seen = {"run": 0, "not run": 0}
    for r in a["runs"]:
        for section in ("format_checks", "judge", "safety", "simulator", "panel", "judge_validity"):
            status = r[section]["status"]
            seen[status] += 1
            prefixes = [f"{r['run']}|{section}"]
            if section in ("judge", "safety", "judge_validity") and status == "run":
                prefixes = [f"{r['run']}|{section}:{j['judge']}|" for j in r[section]["judges"]]
            if status == "run":
                if not all(any(k.startswith(p) for k in figs) for p in prefixes):
                    bad.append(f"{r['run']} {section}: no figures")
            elif f"{r['run']}|{section}" not in not_run:
                bad.append(f"{r['run']} {section}: not shown as not run")
        # Sections left out of the JSON where they did not run (the memory suite; the references'
        # SAP breaks of runs made before they were looked at): shown with their figures where present.
        for section in ("memory", "reference_sap"):
            if section in r and not any(k.startswith(f"{r['run']}|{section}|") for k in figs):
                bad.append(f"{r['run']} {section}: no figures")
    check("every section shows its figures or says it did not run", not bad and seen["run"] > 0 and seen["not run"] > 0,
          "; ".join(bad[:5]) + f" ({seen})")
    want = {}
    for r in a["runs"]:
        run = r["run"]
        if r["format_checks"]["status"] == "run":
            for g in r["format_checks"]["groups"]:
                for c in g["checks"]:
                    want[f"{run}|format_checks|{g['group']}|{c['check']}.pass_rate"] = c["rate"]["mean"]
        if r["judge"]["status"] == "run":
            for j in r["judge"]["judges"]:
                for g in j["groups"]:
                    want[f"{run}|judge:{j['judge']}|{g['group']}|judge_parse_failed"] = g["judge_parse_failed"]
                    want[f"{run}|judge:{j['judge']}|{g['group']}|judge_failed"] = g["judge_failed"]
                    want[f"{run}|judge:{j['judge']}|{g['group']}|mean"] = g["mean"]["mean"] if g["mean"] else None
        if r["safety"]["status"] == "run":
            for j in r["safety"]["judges"]:
                score = j["overall"]["score"]
                want[f"{run}|safety:{j['judge']}|overall|score"] = score["mean"] if score else None
                for g in j["per_risk"]:
                    want[f"{run}|safety:{j['judge']}|risk:{g['group']}|score"] = g["score"]["mean"] if g["score"] else None
        if r["simulator"]["status"] == "run":
            s = r["simulator"]
            want[f"{run}|simulator|all|recall"] = s["recall"]["rate"]
            want[f"{run}|simulator|all|hidden_need_met"] = s["hidden_need_met"]["rate"]
            want[f"{run}|simulator|all|changed_need_met"] = s["changed_need_met"]["rate"]
            for t in s["trajectory"]:
                want[f"{run}|simulator_trajectory|s{t['session']}t{t['turn']}|state"] = t["state"]["mean"]
        want[f"{run}|usage|model|input_tokens"] = r["usage"]["model"]["input_tokens"]
    # The judge panel (each judge's criterion means, the panel mean, Krippendorff's alpha) and the
    # judge validity check (shares ranked correctly with their Wilson intervals, failures apart).
    panel, validity, intervals = {}, {}, {}
    for r in a["runs"]:
        run = r["run"]
        if r["panel"]["status"] == "run":
            for fam, f in r["panel"]["families"].items():
                lines = [(fam, f["mean"], f["agreement"], {})]
                lines += [(f"{fam}/{c}", pc["mean"], pc["agreement"], pc["per_judge"]) for c, pc in f["criteria"].items()]
                for group, mean, agreement, per_judge in lines:
                    base = f"{run}|panel|{group}|"
                    panel[base + "panel_mean"] = mean
                    panel[base + "alpha"] = agreement["alpha"]
                    panel[base + "pairable_items"] = agreement["pairable_items"]
                    for j, v in per_judge.items():
                        panel[base + f"mean:{j}"] = v
        if r["judge_validity"]["status"] == "run":
            for j in r["judge_validity"]["judges"]:
                for fam, cells in j["families"].items():
                    for d, c in cells.items():
                        base = f"{run}|judge_validity:{j['judge']}|{fam}/{d}|"
                        validity[base + "share"] = c["share"]
                        validity[base + "compared"] = c["n"]
                        for k in ("ranked_correctly", "judge_parse_failed", "judge_failed", "not_applicable"):
                            validity[base + k] = c[k]
                        intervals[base + "share"] = c["interval"]
    texts = dict(cdp.eval("[...document.querySelectorAll('#assessments td[data-fig]')].map(td => [td.dataset.fig, td.textContent])"))

    def shows_interval(k, iv):
        t = texts.get(k, "")
        return ("[" not in t and "n/a" in t) if iv is None else f"[{iv[0]:.4f}, {iv[1]:.4f}]" in t
    for name, part in (("judge panel", panel), ("judge validity", validity)):
        wrong_part = [k for k, v in part.items() if not (figs.get(k) is not None and (figs[k] == "" if v is None else float(figs[k]) == v))]
        check(f"{name} figures equal leaderboard.json", not wrong_part and len(part) > 20,
              f"{len(part)} figures, wrong: {wrong_part[:5]}")
    shown = [k for k in figs if k.split("|")[1] == "panel" or k.split("|")[1].startswith("judge_validity:")]
    check("the HTML shows no panel or validity figure leaderboard.json lacks",
          sorted(shown) == sorted(list(panel) + list(validity)), f"{len(shown)} shown, {len(panel) + len(validity)} in JSON")
    bad_iv = [k for k, iv in intervals.items() if not shows_interval(k, iv)]
    check("judge validity shares show their Wilson intervals (n/a under two)", not bad_iv and any(iv for iv in intervals.values()),
          f"wrong: {[(k, texts.get(k), intervals[k]) for k in bad_iv[:3]]}")
    for d in a["sap_safety"]:
        if d["paired"]:
            want[f"|sap_safety|{d['on']}|{d['off']}|{d['judge']}|on_minus_off"] = d["paired"]["diff"]["mean"]
    def same(k, v):
        shown = figs.get(k)
        return shown is not None and (shown == "" if v is None else float(shown) == v)
    wrong = [k for k, v in want.items() if not same(k, v)]
    check("assessment figures equal leaderboard.json", not wrong and len(want) > 100,
          f"{len(want)} figures, wrong: {wrong[:5]}")
    cdp.eval("document.getElementById('assessments').scrollIntoView()")
    cdp.pump(0.3)
    shot = cdp.call("Page.captureScreenshot", {"format": "png"})
    (shots / "assessments.png").write_bytes(base64.b64decode(shot["data"]))
    screenshot_ok(shots / "assessments.png", "assessments")


def launch(chromium, shots, loopback=False):
    """Starts headless Chromium (fresh profile, every host name unresolvable, every request sent to
    a dead proxy; with `loopback`, requests to this machine go direct) and returns the process, a
    DevTools connection to its page and the profile folder."""
    profile = tempfile.mkdtemp(prefix="h2htalk-chromium-")
    cmd = [
        chromium, "--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--metrics-recording-only", "--mute-audio",
        "--host-resolver-rules=MAP * ~NOTFOUND" + (", EXCLUDE 127.0.0.1" if loopback else ""), "--proxy-server=127.0.0.1:9",
        *([] if loopback else ["--proxy-bypass-list=<-loopback>"]),
        f"--user-data-dir={profile}", "--remote-debugging-port=0", "--window-size=1400,1000", "about:blank",
    ]
    if os.geteuid() == 0:
        cmd.insert(1, "--no-sandbox")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(shots / "chromium.log", "w"))
    port_file = pathlib.Path(profile) / "DevToolsActivePort"
    deadline = time.time() + 60
    while not (port_file.exists() and port_file.read_text().strip()):
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            log = (shots / "chromium.log").read_text(errors="replace").splitlines()
            key = [line for line in log if "FATAL" in line or "No space" in line] or log[-5:]
            raise SystemExit(f"chromium did not start (see {shots / 'chromium.log'}):\n" + "\n".join(key))
        time.sleep(0.2)
    port = port_file.read_text().split()[0]
    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
    page = next(t for t in targets if t["type"] == "page")
    cdp = Cdp(page["webSocketDebuggerUrl"])
    for domain in ["Page", "Runtime", "Log", "Network"]:
        cdp.call(f"{domain}.enable")
    cdp.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
    return proc, cdp, profile


def close(proc, cdp, profile):
    """Closes the browser (killing it if it will not go) and removes its profile."""
    try:
        cdp.call("Browser.close", timeout=10)
    except Exception:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(profile, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--min-items", type=int, default=10000)
    ap.add_argument("--max-mb", type=float, default=25.0)
    ap.add_argument("--shots", default=None)
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    args = ap.parse_args()

    report = pathlib.Path(args.report).resolve()
    html = report.read_text(encoding="utf-8")
    lb = json.loads((report.parent / "leaderboard.json").read_text(encoding="utf-8"))
    tr = embedded_json(html, "transcripts-data")
    if 'id="leaderboard-data"' in html:
        check("embedded leaderboard equals leaderboard.json", embedded_json(html, "leaderboard-data") == lb)
    else:
        # A leaderboard over 4 MiB (compact) is left out of the page, which says where it is.
        compact = len(json.dumps(lb, ensure_ascii=False, separators=(",", ":")).encode())
        check("a large leaderboard is left out and the page says where it is",
              compact > 4 << 20 and "beside this file" in html, f"{compact} bytes")
    mb = report.stat().st_size / 1e6
    check(f"report.html is at most {args.max_mb} MB", mb <= args.max_mb, f"{mb:.1f} MB")
    items = tr["items"]
    F = {f: i for i, f in enumerate(tr["fields"])}
    check(f"report holds at least {args.min_items} items", len(items) >= args.min_items, f"{len(items)} items")
    # (The template engine writes "/" in attributes as "&#x2f;": read it back before looking.)
    plain = html.replace("&#x2f;", "/")
    check("no http(s) resource in the HTML", re.search(r'src\s*=\s*["\']?\s*(https?:)?//', plain) is None
          and re.search(r'<link[^>]*href\s*=\s*["\']?\s*(https?:)?//', plain) is None
          and "@import" not in html and "url(http" not in html)
    links = re.findall(r'<a [^>]*href\s*=\s*["\']?\s*((?:https?:)?//[^"\' >]*)', plain)
    check("every link off the page opens h2htalk view on this machine",
          bool(links) and all(link.startswith("http://127.0.0.1:8765/") for link in links),
          f"{len(links)} links, e.g. {[l for l in links if not l.startswith('http://127.0.0.1:8765/')][:3]}")

    shots = pathlib.Path(args.shots or tempfile.mkdtemp(prefix="h2htalk-shots-"))
    shots.mkdir(parents=True, exist_ok=True)
    proc, cdp, profile = launch(args.chromium, shots)
    try:
        cdp.call("Network.emulateNetworkConditions",
                 {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        t0 = time.time()
        cdp.call("Page.navigate", {"url": report.as_uri()})
        ready = None
        while time.time() - t0 < 120:
            ready = cdp.eval("document.readyState === 'complete' && document.body && document.body.dataset.ready === '1'")
            if ready:
                break
            cdp.pump(0.25)
        if not check("page loads and the viewer starts", bool(ready), "document.body.dataset.ready never became 1"):
            raise SystemExit(1)
        print(f"     loaded in {time.time() - t0:.1f} s", flush=True)

        runs = len(lb["runs"])
        groups_per_chart = cdp.eval("[...document.querySelectorAll('#families .chart')].map(c => c.querySelectorAll('g.run-bar').length)")
        check("family bar charts render with a bar per run", bool(groups_per_chart) and max(groups_per_chart) == runs,
              f"bars per chart {groups_per_chart}, runs {runs}")
        whiskers = cdp.eval("document.querySelectorAll('#families line.whisker').length")
        # A mean over fewer than two items has no interval (data-lo is empty) and so no whisker.
        with_ci = cdp.eval("[...document.querySelectorAll('#families g.run-bar')].filter(g => g.dataset.lo !== '').length")
        check("every bar with an interval has its CI whisker", whiskers == 3 * with_ci, f"{whiskers} whisker lines, {with_ci} bars with an interval")
        bar_width = cdp.eval("Math.max(...[...document.querySelectorAll('#families rect.bar')].map(r => r.getBoundingClientRect().width))")
        check("bars have a visible width", bar_width > 10, f"widest bar {bar_width}px")
        heat_rows = cdp.eval("document.querySelectorAll('#heatmap tbody tr').length")
        heat_cells = cdp.eval("document.querySelectorAll('#heatmap td.cell').length")
        check("heat map has a cell per group and run", heat_rows >= len(lb["tasks"]) and heat_cells == heat_rows * runs,
              f"{heat_rows} rows, {heat_cells} cells")
        dom_means = cdp.eval("[...document.querySelectorAll('#heatmap td.cell[data-mean]')].map(c => [c.dataset.run, c.dataset.group, Number(c.dataset.mean)])")
        metric = lb["rank_metric"]
        want = {(r["id"], g["group"]): g["metrics"][metric]["mean"] for r in lb["runs"] for g in r["groups"] if metric in g["metrics"]}
        check("heat map figures equal the leaderboard", len(dom_means) == len(want)
              and all(want.get((r, g)) == v for r, g, v in dom_means), f"{len(dom_means)} cells, {len(want)} values")
        radars = cdp.eval("document.querySelectorAll('#radars svg polygon.area').length")
        check("a radar per run", radars == runs, f"{radars} radars for {runs} runs")
        prov = cdp.eval("document.querySelectorAll('#runs details.provenance pre').length")
        check("provenance of every run", prov == runs, f"{prov}")
        sap_rows = cdp.eval("document.querySelectorAll('#sap table.sap tbody tr').length")
        check("SAP on/off comparison rows", sap_rows == sum(len(s["comparisons"]) for s in lb["sap"]) and sap_rows > 0, f"{sap_rows}")

        check_assessments(cdp, lb, shots)

        cdp.call("Page.bringToFront")
        shot = cdp.call("Page.captureScreenshot", {"format": "png"})
        (shots / "top.png").write_bytes(base64.b64decode(shot["data"]))
        screenshot_ok(shots / "top.png", "top of the report")

        for section in ["families", "heatmap", "radars", "sap"]:
            cdp.eval(f"document.getElementById('{section}').scrollIntoView()")
            cdp.pump(0.2)
            shot = cdp.call("Page.captureScreenshot", {"format": "png"})
            (shots / f"{section}.png").write_bytes(base64.b64decode(shot["data"]))
            screenshot_ok(shots / f"{section}.png", section)

        # The viewer, through the real DOM.
        page_size = 25
        shown = cdp.eval("document.querySelectorAll('#v-list article.item').length")
        check("viewer shows the first page", shown == min(page_size, len(items)), f"{shown} items shown")
        check("viewer counts every item", cdp.eval("document.body.dataset.matches") == str(len(items)))

        def select(element_id, value):
            cdp.eval(f"(() => {{ const e = document.getElementById({json.dumps(element_id)}); e.value = {json.dumps(value)};"
                     f" e.dispatchEvent(new Event(e.tagName === 'SELECT' ? 'change' : 'input', {{bubbles: true}})); }})()")

        def shown_items():
            return cdp.eval("[...document.querySelectorAll('#v-list article.item')].map(a => ({i: Number(a.dataset.index),"
                            " run: Number(a.dataset.run), task: a.dataset.task, score: a.dataset.score === undefined ? null : Number(a.dataset.score),"
                            " answer: a.querySelector('.texts div').textContent}))")

        task = "dialogue_emotion" if "dialogue_emotion" in tr["tasks"] else tr["tasks"][0]
        ti = tr["tasks"].index(task)
        select("f-run", "0")
        select("f-task", str(ti))
        expect = [i for i, it in enumerate(items) if it[F["run"]] == 0 and it[F["task"]] == ti]
        got = shown_items()
        check("filter by run and sub-task", cdp.eval("document.body.dataset.matches") == str(len(expect))
              and [g["i"] for g in got] == expect[:page_size] and all(g["run"] == 0 and g["task"] == task for g in got),
              f"{cdp.eval('document.body.dataset.matches')} matches, expected {len(expect)}")
        cjk = [g for g in got if re.search(r"[\u4e00-\u9fff]", g["answer"])]
        check("Chinese answers are shown as text", len(cjk) > 0)
        widths = cdp.eval("[...document.querySelectorAll('#v-list article.item .texts div')].slice(0, 4).map(d => d.getBoundingClientRect().width * d.getBoundingClientRect().height)")
        check("answer and reference boxes have a size", all(w > 100 for w in widths), f"{widths}")

        metric_name = "rougeL" if "rougeL" in tr["metrics"] else tr["metrics"][0]
        mi = tr["metrics"].index(metric_name)
        select("f-run", "")
        select("f-task", "")
        select("f-metric", metric_name)
        select("f-min", "0.2")
        select("f-max", "0.6")
        expect = [i for i, it in enumerate(items) if it[F["scores"]][mi] is not None and 0.2 <= it[F["scores"]][mi] <= 0.6]
        got = shown_items()
        check(f"filter by {metric_name} range 0.2..0.6", cdp.eval("document.body.dataset.matches") == str(len(expect))
              and [g["i"] for g in got] == expect[:page_size] and all(0.2 <= g["score"] <= 0.6 for g in got),
              f"{cdp.eval('document.body.dataset.matches')} matches, expected {len(expect)}")

        cdp.eval("document.getElementById('p-next').click()")
        got = shown_items()
        check("next page", cdp.eval("document.body.dataset.page") == "2" and [g["i"] for g in got] == expect[page_size:2 * page_size])
        cdp.eval("document.getElementById('p-last').click()")
        got = shown_items()
        pages = -(-len(expect) // page_size)
        check("last page", cdp.eval("document.body.dataset.page") == str(pages)
              and [g["i"] for g in got] == expect[(pages - 1) * page_size:])
        select("f-min", "")
        select("f-max", "")
        cdp.eval("(() => { const e = document.getElementById('p-page'); e.value = '400'; e.dispatchEvent(new Event('change')); })()")
        got = shown_items()
        check("jump to page 400 of all items", cdp.eval("document.body.dataset.page") == "400"
              and [g["i"] for g in got] == list(range(399 * page_size, 400 * page_size)))
        t1 = time.time()
        for _ in range(20):
            cdp.eval("document.getElementById('p-next').click()")
        check("paging forward 20 pages", cdp.eval("document.body.dataset.page") == "420")
        print(f"     20 pages in {time.time() - t1:.2f} s", flush=True)
        cdp.eval("document.querySelector('#v-list article.item details.prompt').open = true")
        cdp.pump(0.3)
        msgs = cdp.eval("document.querySelectorAll('#v-list article.item details.prompt .msg').length")
        check("a prompt opens with its messages", msgs >= 1, f"{msgs} messages")

        cdp.eval("document.getElementById('viewer').scrollIntoView()")
        cdp.pump(0.3)
        shot = cdp.call("Page.captureScreenshot", {"format": "png"})
        (shots / "viewer.png").write_bytes(base64.b64decode(shot["data"]))
        screenshot_ok(shots / "viewer.png", "transcript viewer")

        # Findings by tag (crates/report/src/tags.rs): the tables carry the JSON's figures.
        tags = lb.get("tags")
        if check("leaderboard.json has the tag breakdown", tags is not None):
            cells = cdp.eval("[...document.querySelectorAll('#tags table.tag-groups td[data-mean]')].map(c => [c.closest('details').dataset.run,"
                             " c.closest('tr').dataset.group, c.dataset.measure, Number(c.dataset.mean), c.dataset.lo, c.dataset.hi])")
            want = {(r["run"], g["group"], m): s for r in tags["runs"] for g in r["groups"] for m, s in g["measures"].items()}

            def same(text, value):
                return (text == "" and value is None) or (value is not None and text != "" and float(text) == value)
            check("tag group cells equal the leaderboard", len(cells) == len(want) and len(cells) > 0
                  and all(want[(r, g, m)]["mean"] == v and same(lo, want[(r, g, m)]["lo"]) and same(hi, want[(r, g, m)]["hi"])
                          for r, g, m, v, lo, hi in cells), f"{len(cells)} cells, {len(want)} values")
            diffs = cdp.eval("[...document.querySelectorAll('#tags table.tag-diffs td[data-diff]')].map(c => [c.closest('tr').dataset.run,"
                             " c.closest('tr').dataset.contrast, c.dataset.measure, c.dataset.diff, c.dataset.lo, c.dataset.hi, c.classList.contains('sig')])")
            want = {(r["run"], d["contrast"], d["measure"]): d for r in tags["runs"] for d in r["differences"]}
            check("tag difference cells equal the leaderboard", len(diffs) == len(want) and len(diffs) > 0
                  and all(same(d, want[(r, c, m)]["diff"]) and same(lo, want[(r, c, m)]["lo"]) and same(hi, want[(r, c, m)]["hi"])
                          and sig == want[(r, c, m)]["excludes_zero"] for r, c, m, d, lo, hi, sig in diffs),
                  f"{len(diffs)} cells, {len(want)} differences")
            # The user simulator by tag: its contrasts and its groups by attachment style and language.
            sim_figs = dict(cdp.eval("[...document.querySelectorAll('#tags td[data-fig]')].map(td => [td.dataset.fig, td.dataset.value])"))
            want = {}
            for r in tags["runs"]:
                s = r["simulator"]
                if s["status"] != "run":
                    continue
                for d in s["differences"]:
                    base = f"{r['run']}|tag_simulator|{d['group']}|"
                    want[base + "difference"] = d["diff"]
                    want[base + d["a"]] = d["mean_a"]
                    want[base + d["b"]] = d["mean_b"]
                    want[base + "simulations"] = d["n"]
                for g in s["groups"]:
                    want[f"{r['run']}|tag_simulator|{g['group']}|simulations"] = g["simulations"]
                    for m in ("recall", "hidden_need_met", "changed_need_met", "state_change"):
                        want[f"{r['run']}|tag_simulator|{g['group']}|{m}"] = g["measures"][m]["mean"] if m in g["measures"] else None
            check("simulator-by-tag figures equal the leaderboard", len(want) > 0 and sorted(sim_figs) == sorted(want)
                  and all(same(sim_figs[k], v) for k, v in want.items()), f"{len(sim_figs)} shown, {len(want)} in JSON")
            cdp.eval("document.getElementById('tags').scrollIntoView()")
            cdp.pump(0.2)
            shot = cdp.call("Page.captureScreenshot", {"format": "png"})
            (shots / "tags.png").write_bytes(base64.b64decode(shot["data"]))
            screenshot_ok(shots / "tags.png", "findings by tag")

        # Side by side: pick two runs and a metric, sort by the largest |B - A|.
        if check("side-by-side view starts", cdp.eval("document.body.dataset.sideReady") == "1") and len(tr["runs"]) >= 2:
            a, b = 0, 1
            sm = "rougeL" if "rougeL" in tr["metrics"] else tr["metrics"][0]
            k = tr["metrics"].index(sm)
            select("s-a", str(a))
            select("s-b", str(b))
            select("s-metric", sm)
            select("s-order", "abs")
            key = lambda it: (it[F["task"]], it[F["scenario_id"]])
            in_b = {key(it): it for it in items if it[F["run"]] == b}
            expect = []
            for i, it in enumerate(items):
                if it[F["run"]] != a or key(it) not in in_b:
                    continue
                va, vb = it[F["scores"]][k], in_b[key(it)][F["scores"]][k]
                expect.append((i, it[F["scenario_id"]], None if va is None or vb is None else vb - va))
            expect.sort(key=lambda e: (e[2] is None, -abs(e[2]) if e[2] is not None else 0, e[0]))
            got = cdp.eval("[...document.querySelectorAll('#s-list article.pair')].map(p => [p.dataset.scenario,"
                           " p.dataset.diff === undefined ? null : Number(p.dataset.diff)])")
            check("side by side pairs every scenario of both runs", cdp.eval("document.body.dataset.sidePairs") == str(len(expect)),
                  f"{cdp.eval('document.body.dataset.sidePairs')} pairs, expected {len(expect)}")
            absd = [abs(d) for _, d in got if d is not None]
            check(f"side by side sorted by the largest |B - A| of {sm}", len(got) > 0 and absd == sorted(absd, reverse=True)
                  and [g[0] for g in got] == [e[1] for e in expect[:len(got)]]
                  and all(abs(g[1] - e[2]) < 1e-12 for g, e in zip(got, expect) if e[2] is not None),
                  f"shown {got[:3]}, expected {[(e[1], e[2]) for e in expect[:3]]}")
            cell = cdp.eval(f"(() => {{ const r = document.querySelector('#s-list article.pair tr[data-metric={json.dumps(sm)}] td.diff');"
                            " return r ? [r.dataset.diff, r.textContent] : null; })()")
            check("side by side shows the difference B - A", cell is not None and expect[0][2] is not None
                  and abs(float(cell[0]) - expect[0][2]) < 1e-12 and cell[1] == ("+" if expect[0][2] > 0 else "") + f"{expect[0][2]:.4f}",
                  f"{cell}, expected {expect[0][2]}")
            select("s-order", "asc")
            got = cdp.eval("[...document.querySelectorAll('#s-list article.pair')].map(p => p.dataset.diff === undefined ? null : Number(p.dataset.diff))")
            vals = [d for d in got if d is not None]
            check("side by side sorted by B - A, lowest first", len(vals) > 0 and vals == sorted(vals))
            cdp.eval("document.getElementById('side').scrollIntoView()")
            cdp.pump(0.3)
            shot = cdp.call("Page.captureScreenshot", {"format": "png"})
            (shots / "side.png").write_bytes(base64.b64decode(shot["data"]))
            screenshot_ok(shots / "side.png", "side-by-side view")

        cdp.pump(0.5)
        errors = []
        requests = []
        for e in cdp.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                errors.append(p["exceptionDetails"].get("text", "") + " " + json.dumps(p["exceptionDetails"].get("exception", {}).get("description", "")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                errors.append(f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                errors.append(f"log {p['entry']['level']}: {p['entry']['text']} {p['entry'].get('url', '')}")
            elif m == "Network.requestWillBeSent":
                url = p["request"]["url"]
                if not url.startswith(("file:", "data:", "about:", "blob:")):
                    requests.append(url)
        check("no console errors, warnings or exceptions", not errors, "; ".join(errors[:5]))
        check("no network request", not requests, ", ".join(requests[:5]))
    finally:
        close(proc, cdp, profile)
    print(f"screenshots in {shots}")
    print(f"browser test: {len(PASSED)} passed, {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
