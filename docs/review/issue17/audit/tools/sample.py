"""Fresh stratified random sample for the audit (2026-12-01).
Seed fixed: 20261201. Strata: 11 scenario sub-tasks (6 each, without replacement) and
11 safety risk types x 2 languages (2 each, drawn independently per language).
Reads the snapshot under /work/audit/snapshot (sha256 in snapshot/SHA256SUMS).
Writes /work/audit/sample.json (ids) and prints them."""
import json, random, glob, os, collections
SEED = 20261201
ROOT = "/work/audit/snapshot"
rng = random.Random(SEED)
out = {"seed": SEED, "scenarios": {}, "safety": {"zh": {}, "en": {}}}
for f in sorted(glob.glob(f"{ROOT}/scenarios/*.jsonl")):
    stem = os.path.basename(f)[:-6]
    ids = [json.loads(l)["id"] for l in open(f, encoding="utf-8")]
    out["scenarios"][stem] = sorted(rng.sample(ids, 6))
for lang in ("zh", "en"):
    by = collections.defaultdict(list)
    for l in open(f"{ROOT}/safety/sap_safety.{lang}.jsonl", encoding="utf-8"):
        s = json.loads(l); by[s["tags"]["risk"]].append(s["id"])
    for risk in sorted(by):
        out["safety"][lang][risk] = sorted(rng.sample(by[risk], 2))
json.dump(out, open("/work/audit/sample.json", "w"), ensure_ascii=False, indent=1)
print(json.dumps(out, ensure_ascii=False, indent=1))
