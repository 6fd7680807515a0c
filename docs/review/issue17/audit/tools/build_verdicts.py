"""Writes VERDICTS.md: header, computed summary tables, comparison with the earlier review, verdict lines."""
import json, subprocess
subprocess.run(["python3", "/work/audit/tools/report.py"], check=True, stdout=subprocess.DEVNULL)
exec(open("/work/audit/tools/verdicts_data.py").read())
T = json.load(open("/work/audit/tools/tables.json")); L = open("/work/audit/tools/verdict_lines.md").read()
R = json.load(open("/work/audit/tools/rows.json"))
J = [r for r in R if r["code"] != "_tags"]; TG = [r for r in R if r["code"] == "_tags"]
def rate(js): d = sum(r["sev"] != "ok" for r in js); return d, len(js), 100 * d / len(js)
def trate(ts, lenient=False):
    w = sum(r["tw"] - (r["tws"] if lenient else 0) for r in ts); return w, 5 * len(ts), 100 * w / (5 * len(ts))
sc = [r for r in J if not r["safety"]]; sf = [r for r in J if r["safety"]]
f = lambda t: f"{t[2]:.1f} % ({t[0]} / {t[1]})"
noreal = lambda js: [r for r in js if r["code"] != "REAL"]
fake_items = sorted({r["id"] for r in J if r["code"] == "REAL" and r["sev"] != "ok" and r["safety"]})
nat_sc = sum(1 for r in sc if r["code"] == "NAT" and r["sev"] != "ok")
maj = sum(r["sev"] == "major" for r in J)
head = open("/work/audit/tools/verdicts_head.md").read()
cmp = f"""### Next to the earlier review

| | earlier review (66 scenarios) | this review: 66 sub-task scenarios | this review: 44 safety items | this review: all 110 |
|---|---|---|---|---|
| judgements with a defect | 4.2 % (all minor) | {f(rate(sc))} | {f(rate(sf))} | {f(rate(J))} |
| same, without the REAL judgement (the earlier review may not have had it) | — | {f(rate(noreal(sc)))} | {f(rate(noreal(sf)))} | {f(rate(noreal(J)))} |
| major defects | none reported (4.2 % were minor) | {sum(r['sev']=='major' for r in sc)} | {sum(r['sev']=='major' for r in sf)} | {maj} |
| tag values wrong | 7.6 % | {f(trate([r for r in TG if not r['safety']]))}; lenient {trate([r for r in TG if not r['safety']], True)[2]:.1f} % | {f(trate([r for r in TG if r['safety']]))}; lenient {trate([r for r in TG if r['safety']], True)[2]:.1f} % | {f(trate(TG))}; lenient {trate(TG, True)[2]:.1f} % |

Reading: tags in the rewritten suite are clearly better than the earlier review found ({trate([r for r in TG if not r['safety']])[2]:.1f} % against
7.6 %); the judgement defect rate is higher ({rate(sc)[2]:.1f} % against 4.2 %), but the samples used different judgement sets and
the rewrite added surface (longer histories, dated sessions, hidden changes, notes padded to the style targets):
{nat_sc} of the suite's {rate(sc)[0]} defects are natural-language slips, 4 of them caused by the length targets (3 padded
itinerary_middle notes, 1 base reply clipped to 30 characters). No defect makes an item measure the wrong thing
(no major defect). In the safety set, one cause, fake multi_session, gives {2*len(fake_items)} of its {rate(sf)[0]} defects
(TAGS + REAL on each of {len(fake_items)} items).

The earlier review's named findings, rechecked:
- **Announced need changes** → fixed in part. Of the 4 sampled items listed as hidden, 3 are really hidden
  (dialogue_base-011, dialogue_emotion-021, dialogue_schedule-012); dialogue_base-042 says the new need outright.
  New: hidden changes are tagged `implicit_need: false` (2 of the 3 real hidden ones in the sample; 20 of 26 hidden
  items in the whole suite), although a hidden need is by construction never said outright.
- **Fake multi-session** → fixed in the suite (7 of 7 sampled dialogue/synthesize multi_session items have real
  dated sessions with the detail only there; one weak: dialogue_base-042), **not fixed in the safety set**:
  {len(fake_items)} of the 44 sampled safety items (18 of 66 per language in the files) are `multi_session: true` with no
  earlier session in the inputs, only a recap line ("上次你说…" / "Last time you said…") by the companion two lines up.
- **Self-contradicting safety set** → largely fixed: no sampled `expected` forbids what a secure base must say
  (fraud hallmarks, drink-driving is illegal, insulin), no bodily action in crisis/ai_identity references, every
  sampled reference satisfies its `expected`, locales are clean (one British "in hospital"). Left: sap-011 / sap-011-en
  still plan an in-person hotpot with Xiaoman ("火锅改天再吃" / "Hotpot can wait") against sap-038's "cannot meet
  offline", and sap-021 / -en give an exclusivity example as the presence example.

"""
open("/work/audit/VERDICTS.md", "w").write(head + "## Verdicts\n" + L + "\n## Summary\n\n" + cmp + "\n### Defects by judgement (minor + major)\n\n" + T["codes"] + "\n\n### Per sub-task, per risk type, overall\n\nDefect rate = judgements with a defect / judgements made; tags wrong = wrong tag values / sampled tag values (5 per item).\n\n" + T["table"] + "\n")
print(cmp[:1500])
