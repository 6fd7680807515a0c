"""Write resolved.jsonl and disagreements.md from first.jsonl, second.jsonl and the decisions in
resolve_emotions.txt / resolve_bools.txt."""
import json
from collections import Counter
A = {}; order = []
for l in open("first.jsonl"):
    r = json.loads(l); A[r["id"]] = r["tags"]; order.append(r["id"])
B = {json.loads(l)["id"]: json.loads(l)["tags"] for l in open("second.jsonl")}
emo = {}
for l in open("resolve_emotions.txt", encoding="utf-8"):
    if l.startswith("#") or not l.strip(): continue
    i, res, why = l.rstrip("\n").split("|", 2)
    reasons = {}
    EMO = {"loneliness","grief","anxiety","anger","shame","joy","boredom","sadness","stress","fear",
           "guilt","jealousy","excitement","affection","nostalgia","frustration","calm"}
    last = []
    for seg in why.split("; "):
        labs, sep, txt = seg.partition(": ")
        names = [x.strip() for x in labs.split(",")]
        if sep and all(n in EMO for n in names):
            last = names
            for lab in names: reasons[lab] = txt.strip()
        else:  # continuation of the previous segment
            for lab in last: reasons[lab] += "; " + seg.strip()
    emo[i] = (res.split(","), reasons, why)
boo = {}
for l in open("resolve_bools.txt", encoding="utf-8"):
    if l.startswith("#") or not l.strip(): continue
    i, t, v, why = l.rstrip("\n").split("|", 3)
    boo[(i, t)] = (v == "true", why)
rows = []; resolved = {}; errors = []
for i in order:
    a, b = A[i], B[i]
    r = {"emotions": list(a["emotions"]), "implicit_need": a["implicit_need"],
         "changing_need": a["changing_need"], "multi_session": a["multi_session"]}
    for t in ("implicit_need", "changing_need", "multi_session"):
        if a[t] != b[t]:
            if (i, t) not in boo: errors.append(f"no decision {i} {t}"); continue
            v, why = boo[(i, t)]; r[t] = v
            rows.append((i, t, a[t], b[t], v, why))
        elif (i, t) in boo:
            errors.append(f"decision without disagreement {i} {t}")
    sa, sb = set(a["emotions"]), set(b["emotions"])
    if sa != sb:
        if i not in emo: errors.append(f"no emotion decision {i}"); continue
        res, reasons, why = emo[i]
        sr = set(res)
        if not (sa & sb) <= sr <= (sa | sb):
            errors.append(f"{i}: resolved {sorted(sr)} outside [{sorted(sa&sb)}, {sorted(sa|sb)}]")
        for lab in sorted(sa ^ sb):
            pass  # a label without its own segment gets the whole reason line
            rows.append((i, "emotion:" + lab, lab in sa, lab in sb, lab in sr, reasons.get(lab, why)))
        # keep first's order, then any added labels in the order written
        r["emotions"] = [e for e in a["emotions"] if e in sr] + [e for e in res if e not in sa]
    elif i in emo:
        errors.append(f"emotion decision without disagreement {i}")
    resolved[i] = r
for e in errors: print("ERROR", e)
with open("resolved.jsonl", "w") as f:
    for i in order:
        f.write(json.dumps({"id": i, "tags": resolved[i]}, ensure_ascii=False) + "\n")
b = lambda x: "true" if x else "false"
side = Counter(); per = Counter()
for i, t, fa, sb_, v, _ in rows:
    per[t if not t.startswith("emotion:") else "emotions (labels)"] += 1
    side[(t.split(":")[0], "first" if v == fa else "second")] += 1
with open("disagreements.md", "w", encoding="utf-8") as f:
    f.write("# Tag disagreements between the first annotation (the scenario files' tags as of 23:04 UTC,\n"
            "saved in first.jsonl) and the second, independent annotation (second.jsonl), and their resolution\n\n")
    f.write("One row per disagreement. For emotions each label is its own row (`emotion:<name>`, value = present).\n"
            "`resolved` is what resolved.jsonl carries. Rules applied (TAGS.md):\n\n"
            "- `implicit_need`: true when the user never says what they want; stating a feeling (\"好烦\", \"越查越怕\")\n"
            "  is not stating a want. A hidden change makes the new need implicit. An outright request, or a\n"
            "  direct question asking for a verdict (\"我是不是很小气\"), is false.\n"
            "- `changing_need`: true when a reply to the need the user showed earlier would miss the need shown at\n"
            "  the end (including a new detail that turns advice into comfort or the reverse).\n"
            "- emotions: for the dialogue sub-tasks, all user turns (sessions included); for itinerary_basic and\n"
            "  itinerary_initialize, the mood of the memories only (never the companion's care in the\n"
            "  reference, which is where most `affection`/`joy` extras came from); neutral facts and preferences = `calm`;\n"
            "  for itinerary_middle/advanced, the mood of the overview/itinerary (the companion's own day, so its\n"
            "  affection counts there); `sadness` is kept beside `grief` where the user shows it.\n\n")
    f.write("Counts: " + ", ".join(f"{k} {v}" for k, v in per.items()) + f", total {len(rows)}.\n")
    f.write("Resolved in favour of: " + ", ".join(f"{k[0]}→{k[1]} {v}" for k, v in sorted(side.items())) + ".\n\n")
    f.write("| id | tag | first | second | resolved | reason |\n|---|---|---|---|---|---|\n")
    for i, t, fa, sb_, v, why in rows:
        f.write(f"| {i} | {t} | {b(fa)} | {b(sb_)} | {b(v)} | {why.replace('|', '/')} |\n")
print(len(rows), "rows;", dict(per)); print(dict(side))
