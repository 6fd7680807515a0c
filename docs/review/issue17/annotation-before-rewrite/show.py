import json,sys
ORDER=["dialogue_base","dialogue_emotion","dialogue_schedule","recollection_synthesize","recollection_refine","recollection_initialize","itinerary_basic","itinerary_middle","itinerary_advanced","itinerary_feedback","itinerary_initialize"]
def turns(h):
    return "\n".join(("U: " if t["role"]=="user" else "A: ")+t["content"] for t in h)
def mem(m): return f'[{m["category"]}/{m["importance"]}] {m["content"]}'
def show(s):
    i=s["inputs"]; out=[f'### {s["id"]} ({s["persona"]})']
    for k,v in i.items():
        if k=="sessions":
            for se in v: out.append(f'--session {se["date"]}--\n'+turns(se["history"]))
        elif k=="history": out.append(f'--current {i.get("date","")}--\n'+turns(v))
        elif k=="date" and "history" in i: pass
        elif k=="session": out.append(f'--session {v["date"]}--\n'+turns(v["history"]))
        elif k in("schedule","itinerary"): out.append(k+": "+" | ".join(f'{x["time"]} {x["activity"]}' for x in v))
        elif k=="memories": out.append("memories: "+" ; ".join(mem(m) for m in v))
        elif k=="memory" and isinstance(v,dict): out.append("memory: "+mem(v))
        else: out.append(f'{k}: {v}')
    out.append("REF: "+s["reference"])
    return "\n".join(out)
stem=sys.argv[1]; rng=sys.argv[2:] 
for line in open(f"snapshot/{stem}.jsonl"):
    s=json.loads(line); s.pop("tags")
    n=int(s["id"][-3:])
    if rng and not (int(rng[0])<=n<=int(rng[1])): continue
    print(show(s)); print()
