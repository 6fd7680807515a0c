import json, re, sys, os, glob, statistics
SC = "/work/suite-staging/suites/scenarios"
P = {"s": "shen-yan", "x": "xia-xiaoman"}
FL = {"i": "implicit_need", "c": "changing_need", "m": "multi_session"}
EMO = set("loneliness grief anxiety anger shame joy boredom sadness stress fear guilt jealousy excitement affection nostalgia frustration calm".split())

def parse(path, stem):
    """DSL -> list of scenario dicts (dialogue / synthesize)."""
    out = []; meta = {}
    cur = None
    for raw in open(path, encoding="utf-8"):
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("//"):
            continue
        if line.startswith("# "):
            p = line[2:].split()
            num, per = p[0], P[p[1]]
            emo = []; flags = ""
            for tok in p[2:]:
                if tok.startswith("emo="): emo = tok[4:].split(",")
                if tok.startswith("f="): flags = tok[2:]
            cur = dict(id=f"{stem}-{int(num):03d}", per=per, emo=emo, flags=flags, sess=[], hist=None, ref=[], sched=None, now=None)
            out.append(cur); continue
        tag, _, rest = line.partition(" ")
        if tag.startswith("@"):
            cur["sess"].append([tag[1:], []])
        elif tag in ("U", "A"):
            turn = {"role": "user" if tag == "U" else "assistant", "content": rest}
            if cur["sess"]: cur["sess"][-1][1].append(turn)
            else:
                cur.setdefault("flat", []).append(turn)
        elif tag == "=":
            cur["ref"].append(rest)
        elif tag == "T":
            cur["sched"] = [{"time": x.strip()[:5], "activity": x.strip()[6:]} for x in rest.split("|")]
        elif tag == "N":
            cur["now"] = rest.strip()
        else:
            raise SystemExit(f"bad line in {cur and cur['id']}: {line}")
    res = []
    for c in out:
        inputs = {}
        if c["sched"] is not None:
            inputs["schedule"] = c["sched"]; inputs["now"] = c["now"]
        if c["sess"]:
            if len(c["sess"]) < 2: raise SystemExit(f"{c['id']}: single session marker")
            inputs["sessions"] = [{"date": d, "history": h} for d, h in c["sess"][:-1]]
            inputs["date"] = c["sess"][-1][0]
            inputs["history"] = c["sess"][-1][1]
        else:
            inputs["history"] = c.get("flat", [])
        ref = "\n".join(c["ref"]).replace("\\n", "\n")
        tags = {"emotions": c["emo"], "implicit_need": "i" in c["flags"], "changing_need": "c" in c["flags"],
                "multi_session": "m" in c["flags"], "risk": None}
        res.append(({"id": c["id"], "task": stem, "persona": c["per"], "lang": "zh", "inputs": inputs,
                     "reference": ref, "tags": tags}, "h" in c["flags"]))
    return res

def write(stem, items):
    with open(f"{SC}/{stem}.jsonl", "w", encoding="utf-8") as f:
        for s in items:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")

if __name__ == "__main__":
    stem, path = sys.argv[1], sys.argv[2]
    res = parse(path, stem)
    ids = [s["id"] for s, _ in res]
    assert ids == [f"{stem}-{i:03d}" for i in range(1, 43)], ids
    write(stem, [s for s, _ in res])
    json.dump([s["id"] for s, h in res if h], open(f"/work/suite-staging/work/hidden_{stem}.json", "w"))
    print("wrote", len(res))
