"""Builds VERDICTS.md from tools/verdicts_data.py + the sampled items (audit 2026-12-01)."""
import json, collections
exec(open("/work/audit/tools/verdicts_data.py").read())
ROOT = "/work/audit/snapshot"
S = json.load(open("/work/audit/sample.json"))
def load(p): return {json.loads(l)["id"]: json.loads(l) for l in open(p, encoding="utf-8")}
SC_CODES = ["FIT", "GIVE", "PERS", "NAT", "FMT", "TAGS", "SAP", "REAL"]
SF_CODES = ["FIT", "PERS", "NAT", "FMT", "TAGS", "SAP", "EXPC", "SATS", "LOC", "REAL"]
NAMES = dict(FIT="fit", GIVE="no give-away", PERS="persona", NAT="natural language", FMT="format", TAGS="tags",
             SAP="SAP honesty", REAL="session/change real", EXPC="expected coherent", SATS="reference satisfies expected", LOC="locale")
items = []  # (id, group, lang, item)
for stem, ids in S["scenarios"].items():
    D = load(f"{ROOT}/scenarios/{stem}.jsonl")
    items += [(i, stem, "zh", D[i]) for i in ids]
for lang in ("zh", "en"):
    D = load(f"{ROOT}/safety/sap_safety.{lang}.jsonl")
    for risk, ids in S["safety"][lang].items():
        items += [(i, risk, lang, D[i]) for i in ids]
assert set(V) == {i for i, *_ in items}, set(V) ^ {i for i, *_ in items}
rows = []; lines = []
for i, grp, lang, s in items:
    safety = s["tags"]["risk"] is not None
    codes = SF_CODES if safety else SC_CODES
    t = s["tags"]
    real_app = t["multi_session"] or t["changing_need"] or s["task"] == "recollection_initialize"
    given = V[i]
    for c in given: assert c in codes, (i, c)
    lines.append(f"\n### {i}  ({grp}{', ' + lang if safety else ''}; tags {json.dumps({k: t[k] for k in t if t[k] not in (False, None)}, ensure_ascii=False)})\n")
    tw = 0; tws = 0
    for c in codes:
        if c == "REAL" and not real_app:
            assert c not in given, i
            lines.append(f"- {c} ({NAMES[c]}): n/a (no multi_session / changing_need)")
            continue
        sev, note, *rest = given.get(c, ("ok", ""))
        if c == "TAGS" and sev != "ok":
            tw = rest[0]; tws = tw if (len(rest) > 1 and rest[1] == "strict") else 0
        label = {"ok": "ok", "minor": "minor defect", "major": "major defect"}[sev]
        strict = " [strict reading of TAGS.md]" if (c == "TAGS" and len(rest) > 1) else ""
        lines.append(f"- {c} ({NAMES[c]}): {label}{strict}" + (f": {note}" if note else ""))
        rows.append(dict(id=i, grp=grp, lang=lang, safety=safety, code=c, sev=sev))
    items_tag = dict(id=i, grp=grp, lang=lang, safety=safety, tw=tw, tws=tws)
    rows.append(dict(id=i, grp=grp, lang=lang, safety=safety, code="_tags", tw=tw, tws=tws))
J = [r for r in rows if r["code"] != "_tags"]; T = [r for r in rows if r["code"] == "_tags"]
def agg(js, ts):
    n = len(js); d = sum(r["sev"] != "ok" for r in js); mi = sum(r["sev"] == "minor" for r in js); ma = sum(r["sev"] == "major" for r in js)
    items_n = len(ts); tv = 5 * items_n; tw = sum(r["tw"] for r in ts); tws = sum(r["tws"] for r in ts)
    return items_n, n, mi, ma, d, (100 * d / n if n else 0), tv, tw, (100 * tw / tv if tv else 0), (100 * (tw - tws) / tv if tv else 0)
H = "| stratum | items | judgements | minor | major | defect rate | tag values | tags wrong | tags wrong % | tags wrong % (lenient) |\n|---|---|---|---|---|---|---|---|---|---|"
def row(name, js, ts):
    a = agg(js, ts)
    return f"| {name} | {a[0]} | {a[1]} | {a[2]} | {a[3]} | {a[5]:.1f} % | {a[6]} | {a[7]} | {a[8]:.1f} % | {a[9]:.1f} % |"
out = []
out.append(H)
for stem in S["scenarios"]:
    out.append(row(stem, [r for r in J if r["grp"] == stem], [r for r in T if r["grp"] == stem]))
out.append(row("**all sub-task scenarios**", [r for r in J if not r["safety"]], [r for r in T if not r["safety"]]))
out.append("")
out.append(H)
for risk in S["safety"]["zh"]:
    out.append(row(f"{risk} (zh+en)", [r for r in J if r["grp"] == risk], [r for r in T if r["grp"] == risk]))
for lang in ("zh", "en"):
    out.append(row(f"**safety {lang}**", [r for r in J if r["safety"] and r["lang"] == lang], [r for r in T if r["safety"] and r["lang"] == lang]))
out.append(row("**all safety**", [r for r in J if r["safety"]], [r for r in T if r["safety"]]))
out.append("")
out.append(H)
out.append(row("**everything**", J, T))
# per judgement code
pc = collections.defaultdict(lambda: [0, 0])
for r in J: pc[(r["safety"], r["code"])][0] += 1; pc[(r["safety"], r["code"])][1] += r["sev"] != "ok"
code_tab = ["| judgement | scenarios: defects / made | safety: defects / made |", "|---|---|---|"]
for c in ["FIT", "GIVE", "PERS", "NAT", "FMT", "TAGS", "SAP", "REAL", "EXPC", "SATS", "LOC"]:
    a = pc.get((False, c)); b = pc.get((True, c))
    code_tab.append(f"| {c} ({NAMES[c]}) | {f'{a[1]} / {a[0]}' if a else 'n/a'} | {f'{b[1]} / {b[0]}' if b else 'n/a'} |")
json.dump(dict(table="\n".join(out), codes="\n".join(code_tab)), open("/work/audit/tools/tables.json", "w"), ensure_ascii=False); json.dump(rows, open("/work/audit/tools/rows.json", "w"))
open("/work/audit/tools/verdict_lines.md", "w").write("\n".join(lines) + "\n")
print("\n".join(out)); print(); print("\n".join(code_tab))
