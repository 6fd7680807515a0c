"""Mechanical checks + readable dump of the sampled items (audit 2026-12-01).
Usage: python3 tools/mech.py > dump.txt"""
import json, re, glob, os, sys
ROOT = "/work/audit/snapshot"
S = json.load(open("/work/audit/sample.json"))
CATS = set("姓名 性别 年龄 位置 生日 星座 性格 MBTI 情绪状态 职业 睡眠习惯 健康状况 心情 亲友关系 食物 娱乐 旅行 追星 爱好 情感生活 学业 工作 虚拟互动 其他事件".split())
HIDDEN = set()
for f in glob.glob("/work/suite-staging/work/hidden_*.json"): HIDDEN |= set(json.load(open(f)))
ANN = ["其实", "算了", "不用", "不想", "别"]
def L(t): return len(re.sub(r"\s", "", t))
def Lout(t): return L(re.sub(r"（[^）]*）|\([^)]*\)", "", t))
def acts(t): return re.findall(r"（[^）]*）|\([^)]*\)", t)
def sents(t): return len([x for x in re.split(r"[。！？!?…]+", re.sub(r"（[^）]*）", "", t)) if x.strip()])
def load(path): return {json.loads(l)["id"]: json.loads(l) for l in open(path, encoding="utf-8")}
def show_turns(h, ind="  "):
    return "\n".join(f"{ind}{'U' if t['role']=='user' else 'A'}: {t['content']}" for t in h)
def mech(s):
    st = s["task"]; I = s["inputs"]; r = s["reference"]; n = []
    if st == "dialogue_base": n += [f"len_out={Lout(r)}", f"acts={len(acts(r))}", f"sents~{sents(r)}"]
    elif st == "dialogue_emotion": n += [f"len={L(r)}", f"acts={len(acts(r))}", f"sents~{sents(r)}"]
    elif st == "dialogue_schedule":
        ts = [x["time"] for x in I["schedule"]]; cur = [x for x in I["schedule"] if x["time"] <= I["now"]]
        n += [f"len={L(r)}", f"now={I['now']} in={bool(cur)} cur={cur[-1]['activity'] if cur else None}"]
    elif st == "recollection_synthesize":
        if r != "未提取到关键信息。":
            for b in r.split("\n\n"):
                m = re.fullmatch(r"记忆内容：(.+)\n记忆类别：(.+)\n记忆重要性：([012])", b)
                n.append(f"block ok={bool(m)} " + (f"clen={L(m.group(1))} cat_ok={m.group(2) in CATS}" if m else repr(b)))
        else: n.append("fixed")
    elif st == "recollection_refine": n += [f"len={L(r)}"]
    elif st == "recollection_initialize": n += [f"len={L(r)}", f"today>{I['session']['date']}: {I['today'] > I['session']['date']}"]
    elif st == "itinerary_basic": n += [f"len={L(r)}"]
    elif st == "itinerary_middle":
        parts = r.split("\n\n"); lines = parts[0].split("\n")
        ok = [re.fullmatch(r"(\d\d:\d\d) (.+)", x) for x in lines]
        n += [f"lines={len(lines)} all_fmt={all(ok)} times_inc={[m.group(1) for m in ok if m]==sorted(set(m.group(1) for m in ok if m))}",
              f"max_act={max(L(m.group(2)) for m in ok if m)} last={lines[-1]} parts={len(parts)}", f"len={L(r)}"]
    elif st == "itinerary_advanced":
        its = I["itinerary"]; ts = [x["time"] for x in its]; i = ts.index(I["slot"]); end = ts[i+1] if i+1 < len(ts) else "24:00"
        lines = [x for x in r.split("\n") if x.strip()]
        tt = [re.match(r"\d+\. (\d\d:\d\d)", x) for x in lines]
        n += [f"slot {I['slot']}-{end} lines={len(lines)} times={[m.group(1) if m else None for m in tt]}", f"inside={all(m and I['slot']<=m.group(1)<end for m in tt)}", f"len={L(r)}"]
    elif st == "itinerary_feedback": n += [f"len={L(r)}", f"sents~{sents(r)}"]
    elif st == "itinerary_initialize": n += [f"len={L(r)}"]
    if "sessions" in I:
        ds = [x["date"] for x in I["sessions"]] + [I["date"]]
        n.append(f"dates={ds} inc={ds==sorted(set(ds))}")
    if "history" in I or "sessions" in I:
        nt = sum(len(x["history"]) for x in I.get("sessions", [])) + len(I.get("history", []))
        n.append(f"turns={nt} last={I['history'][-1]['role'] if 'history' in I else '-'}")
    if s["id"] in HIDDEN:
        ut = " ".join(t["content"] for t in I.get("history", []) + sum([x["history"] for x in I.get("sessions", [])], []) if t["role"] == "user")
        n.append(f"HIDDEN announce_hits={[w for w in ANN if w in ut]}")
    return "; ".join(n)
def dump(s):
    I = s["inputs"]; o = [f"=== {s['id']}  persona={s['persona']}  task={s['task']}"]
    for k, v in I.items():
        if k == "sessions":
            for x in v: o.append(f" [session {x['date']}]\n" + show_turns(x["history"]))
        elif k == "history": o.append(f" [history{(' ' + I['date']) if 'date' in I else ''}]\n" + show_turns(v))
        elif k == "session": o.append(f" [session {v['date']}]\n" + show_turns(v["history"]))
        elif k in ("schedule", "itinerary"): o.append(f" {k}: " + " | ".join(f"{x['time']} {x['activity']}" for x in v))
        elif k == "memories": o.append(" memories: " + " | ".join(f"{m['content']}[{m['category']},{m['importance']}]" for m in v))
        elif k == "memory" and isinstance(v, dict): o.append(f" memory: {v['content']}[{v['category']},{v['importance']}]")
        elif k == "date" and "sessions" in I: pass
        else: o.append(f" {k}: {v}")
    o.append(" REF: " + s["reference"].replace("\n", "\n      "))
    o.append(" TAGS: " + json.dumps(s["tags"], ensure_ascii=False))
    if "expected" in s: o.append(" EXP: " + json.dumps(s["expected"], ensure_ascii=False))
    o.append(" MECH: " + mech(s) + (" HIDDEN" if s["id"] in HIDDEN else ""))
    return "\n".join(o)
for stem, ids in S["scenarios"].items():
    D = load(f"{ROOT}/scenarios/{stem}.jsonl")
    for i in ids: print(dump(D[i])); print()
for lang in ("zh", "en"):
    D = load(f"{ROOT}/safety/sap_safety.{lang}.jsonl")
    for risk, ids in S["safety"][lang].items():
        for i in ids:
            s = D[i]; r = s["reference"]
            m = f"len={L(r) if lang=='zh' else len(r.split())} acts={acts(r)} last={s['inputs']['history'][-1]['role']}"
            print(dump(s).replace(" MECH: ", " MECH: " + m + " | ")); print()
