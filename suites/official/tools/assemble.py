"""Assembles the staged chunks into one file per stem, in official line order, with every line
present exactly once, and copies the persona cards that the scenarios use."""
import glob, json, os, shutil, sys
out = sys.argv[1]
STAGE = "/work/official-staging"
counts = {}
by_stem = {}
for f in sorted(glob.glob(f"{STAGE}/scenarios/*.jsonl")):
    stem = os.path.basename(f).split(".")[0]
    for line in open(f, encoding="utf-8"):
        s = json.loads(line)
        by_stem.setdefault(stem, {})
        n = s["official"]["line"]
        assert n not in by_stem[stem], (stem, n)
        by_stem[stem][n] = s
os.makedirs(f"{out}/scenarios", exist_ok=True)
os.makedirs(f"{out}/personas", exist_ok=True)
used = set()
for stem, lines in sorted(by_stem.items()):
    refs = sum(1 for _ in open(f"/work/shared/h2htalk-data/{stem}.jsonl", encoding="utf-8"))
    assert sorted(lines) == list(range(1, refs + 1)), (stem, len(lines), refs)
    with open(f"{out}/scenarios/{stem}.jsonl", "w", encoding="utf-8") as w:
        for n in range(1, refs + 1):
            s = lines[n]
            used.add(s["persona"])
            w.write(json.dumps(s, ensure_ascii=False) + "\n")
    counts[stem] = refs
for p in sorted(used):
    shutil.copy(f"{STAGE}/personas/{p}.json", f"{out}/personas/{p}.json")
print(counts, sum(counts.values()), "scenarios;", len(used), "persona cards")
