#!/usr/bin/env python3
"""Validate official-set scenarios.  Usage: python3 validate.py [FILE ...]  (default: every file in
scenarios/ beside this folder, or in the staging area's scenarios/ when run there)

Checks shape, hashes, input rules, persona cards (personas/ beside this folder or beside the
scenarios), tags (and the flags FORMAT.md's table lets be true per sub-task), earlier sessions
(`sessions` + `date`, dialogue_* and recollection_synthesize only: both or neither, 1 to 3 sessions of
4 to 10 turns, dated oldest first, each before `date`; in dialogue_* present exactly when
multi_session is true), give-away caps, duplicate inputs, and (for recollection_synthesize) that the
history holds each memory the reference lists.  Prints one line per
problem as  FILE:LINE: id: field: message  and a summary; exit 1 if any problem.
"""
import glob, hashlib, json, os, re, sys, datetime
from giveaway import measures, toks

HERE = os.path.dirname(os.path.abspath(__file__))
REFDIR = "/work/shared/h2htalk-data"
OWN = "/work/main/suites/scenarios"
CATS = "姓名 性别 年龄 位置 生日 星座 性格 MBTI 情绪状态 职业 睡眠习惯 健康状况 心情 亲友关系 食物 娱乐 旅行 追星 爱好 情感生活 学业 工作 虚拟互动 其他事件".split()
EMOS = "loneliness grief anxiety anger shame joy boredom sadness stress fear guilt jealousy excitement affection nostalgia frustration calm".split()
WEEK = ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日"]
KEYS = {
    "dialogue_base": ["history"], "dialogue_emotion": ["history"],
    "dialogue_schedule": ["schedule", "now", "history"],
    "recollection_synthesize": ["history"], "recollection_refine": ["memory"],
    "recollection_initialize": ["memory", "session", "today"],
    "itinerary_basic": ["date", "weekday", "hobbies", "memories"],
    "itinerary_middle": ["overview", "wake"], "itinerary_advanced": ["itinerary", "slot"],
    "itinerary_feedback": ["itinerary", "now", "feedback"],
    "itinerary_initialize": ["itinerary", "now", "memories"],
}
NKI = "未提取到关键信息。"
SESSION_STEMS = ("dialogue_base", "dialogue_emotion", "dialogue_schedule", "recollection_synthesize")
DIALOGUE = ("dialogue_base", "dialogue_emotion", "dialogue_schedule")
# FORMAT.md, "Which flags can be true in which sub-task"
APPLIES = {
    "implicit_need": set(DIALOGUE) | {"itinerary_feedback"},
    "changing_need": set(DIALOGUE),
    "multi_session": set(SESSION_STEMS) | {"recollection_initialize", "itinerary_basic", "itinerary_initialize"},
}

def refs(stem):
    out = []
    with open(os.path.join(REFDIR, stem + ".jsonl"), encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line)["response"])
    return out

def own_caps():
    cache = os.path.join(HERE, "caps.json")
    if os.path.exists(cache):
        return {k: tuple(v) for k, v in json.load(open(cache)).items()}
    caps = {}
    for f in glob.glob(os.path.join(OWN, "*.jsonl")):
        stem = os.path.basename(f)[:-6]
        r, l = [], []
        for line in open(f, encoding="utf-8"):
            s = json.loads(line)
            if s["lang"] != "zh":
                continue
            a, b = measures(s["reference"], s["inputs"])
            r.append(a); l.append(b)
        caps[stem] = (min(0.95, max(r) + 0.10), max(l) + 2)
    json.dump(caps, open(cache + ".tmp", "w"))
    os.replace(cache + ".tmp", cache)
    return caps

def tmin(s):
    if not isinstance(s, str) or not re.fullmatch(r"[0-2]\d:[0-5]\d", s) or int(s[:2]) > 23:
        return None
    return int(s[:2]) * 60 + int(s[3:])

def date(s):
    try:
        if not re.fullmatch(r"\d{4}-\d\d-\d\d", s):
            return None
        return datetime.date.fromisoformat(s)
    except Exception:
        return None

class P:
    def __init__(self): self.n = 0
    def __call__(self, where, field, msg):
        self.n += 1
        print(f"{where}: {field}: {msg}")

def check_history(p, w, field, h, must_user):
    if not isinstance(h, list) or not h:
        return p(w, field, "a non-empty list of turns")
    for i, t in enumerate(h):
        if not isinstance(t, dict) or set(t) != {"role", "content"} or t.get("role") not in ("user", "assistant") \
                or not isinstance(t.get("content"), str) or not t["content"].strip():
            p(w, f"{field}[{i}]", "a turn is {role: user|assistant, content: non-empty string}")
    if must_user and isinstance(h[-1], dict) and h[-1].get("role") != "user":
        p(w, field, "the last turn must be the user's")

def check_slots(p, w, field, slots):
    if not isinstance(slots, list) or len(slots) < 2:
        return p(w, field, "a list of at least two slots") or []
    times = []
    for i, s in enumerate(slots):
        if not isinstance(s, dict) or set(s) != {"time", "activity"} or tmin(s.get("time")) is None \
                or not isinstance(s.get("activity"), str) or not s["activity"].strip():
            p(w, f"{field}[{i}]", "a slot is {time: HH:MM, activity: non-empty string}")
            continue
        t = tmin(s["time"])
        if times and t <= times[-1]:
            p(w, f"{field}[{i}].time", "times must strictly increase")
        times.append(t)
    return times

def check_memory(p, w, field, m):
    if not isinstance(m, dict) or set(m) != {"content", "category", "importance"}:
        return p(w, field, "a memory is {content, category, importance}")
    if not isinstance(m["content"], str) or not m["content"].strip():
        p(w, field + ".content", "non-empty string")
    if m["category"] not in CATS:
        p(w, field + ".category", f"`{m['category']}` is not one of the 24 categories")
    if m["importance"] not in (0, 1, 2):
        p(w, field + ".importance", "0, 1 or 2")

def ref_memories(ref):
    out = []
    for block in ref.strip().split("\n\n"):
        for l in block.splitlines():
            l = l.strip()
            if l.startswith("记忆内容："):
                out.append(l[len("记忆内容："):].strip().rstrip("。"))
    return out

STOP = set("用户 喜欢 自己 一个 一些 我们 他们 觉得 感到 最近 经常 非常 很 的 了 和 在 是 有 被 对 与 把 让 会 要 想".split())

def main(files):
    p = P()
    caps = own_caps()
    personas = {}
    pdir = os.path.join(HERE, "personas")
    if not os.path.isdir(pdir):
        pdir = os.path.join(HERE, "..", "personas")
    for f in glob.glob(os.path.join(pdir, "*.json")):
        try:
            c = json.load(open(f, encoding="utf-8"))
            personas[c["id"]] = c
            need = ["id", "lang", "name", "age", "gender", "occupation", "relationship", "likes", "dislikes",
                    "temperament", "daily_life", "voice", "note"]
            if sorted(c) != sorted(need):
                p(f, "keys", f"a persona card has exactly {need}")
            if c["id"] != os.path.basename(f)[:-5]:
                p(f, "id", "must equal the file name without .json")
        except Exception as e:
            p(f, "json", str(e))
    refcache = {}
    seen = {}
    counts = {}
    for f in files:
        stem = os.path.basename(f).split(".")[0]
        if stem not in KEYS:
            p(f, "file", "name must be <stem>.<anything>.jsonl"); continue
        if stem not in refcache:
            refcache[stem] = refs(stem)
        R = refcache[stem]
        for ln, raw in enumerate(open(f, encoding="utf-8"), 1):
            w = f"{os.path.relpath(f, HERE)}:{ln}"
            try:
                s = json.loads(raw)
            except Exception as e:
                p(w, "json", str(e)); continue
            if set(s) != {"id", "task", "persona", "lang", "inputs", "official", "tags"}:
                p(w, "keys", f"exactly id, task, persona, lang, inputs, official, tags (got {sorted(s)})"); continue
            o = s["official"]
            if not isinstance(o, dict) or set(o) != {"stem", "line", "sha256"} or o.get("stem") != stem \
                    or not isinstance(o.get("line"), int) or not 1 <= o["line"] <= len(R):
                p(w, "official", f"{{stem: {stem}, line: 1..{len(R)}, sha256}}"); continue
            line = o["line"]; ref = R[line - 1]
            w = f"{w}: {s['id']}"
            if s["id"] != f"official-{stem}-{line:04d}":
                p(w, "id", f"must be official-{stem}-{line:04d}")
            if o["sha256"] != hashlib.sha256(ref.encode("utf-8")).hexdigest():
                p(w, "official.sha256", "does not match the reference text of that line")
            if s["id"] in seen:
                p(w, "id", "duplicate id")
            counts[stem] = counts.get(stem, 0) + 1
            if s["task"] != stem: p(w, "task", f"must be {stem}")
            if s["lang"] != "zh": p(w, "lang", "zh")
            if s["persona"] not in personas:
                p(w, "persona", f"no card personas/{s['persona']}.json")
            t = s["tags"]
            if not isinstance(t, dict) or set(t) != {"emotions", "implicit_need", "changing_need", "multi_session", "risk"}:
                p(w, "tags", "emotions, implicit_need, changing_need, multi_session, risk")
            else:
                if not t["emotions"] or any(e not in EMOS for e in t["emotions"]): p(w, "tags.emotions", f"one or more of {EMOS}")
                for k in ("implicit_need", "changing_need", "multi_session"):
                    if not isinstance(t[k], bool): p(w, f"tags.{k}", "true or false")
                if t["risk"] is not None: p(w, "tags.risk", "null")
                for k, stems in APPLIES.items():
                    if t[k] is True and stem not in stems:
                        p(w, f"tags.{k}", f"cannot be true in {stem} (FORMAT.md's table)")
                if stem == "recollection_initialize" and t["multi_session"] is not True:
                    p(w, "tags.multi_session", "always true in recollection_initialize")
            i = s["inputs"]
            extra = sorted(set(i) - set(KEYS[stem])) if isinstance(i, dict) else []
            if not isinstance(i, dict) or not set(KEYS[stem]) <= set(i) or \
                    (extra and (stem not in SESSION_STEMS or extra != ["date", "sessions"])):
                p(w, "inputs", f"exactly {KEYS[stem]}" + (" (and optionally both sessions and date)" if stem in SESSION_STEMS else "")); continue
            if extra:
                d = date(i["date"])
                if d is None: p(w, "inputs.date", "YYYY-MM-DD")
                se = i["sessions"]
                if not isinstance(se, list) or not 1 <= len(se) <= 3:
                    p(w, "inputs.sessions", "a list of 1 to 3 earlier sessions")
                else:
                    prev = None
                    for k, x in enumerate(se):
                        f2 = f"inputs.sessions[{k}]"
                        if not isinstance(x, dict) or set(x) != {"date", "history"} or date(x.get("date")) is None:
                            p(w, f2, "{date: YYYY-MM-DD, history: [...]}"); continue
                        check_history(p, w, f2 + ".history", x["history"], False)
                        if isinstance(x["history"], list) and not 4 <= len(x["history"]) <= 10:
                            p(w, f2 + ".history", "4 to 10 turns")
                        xd = date(x["date"])
                        if prev is not None and xd <= prev: p(w, f2 + ".date", "sessions oldest first, each on a later day")
                        if d is not None and xd >= d: p(w, f2 + ".date", "before the current `date`")
                        prev = xd
            if stem in DIALOGUE and isinstance(t, dict) and t.get("multi_session") is not bool(extra):
                p(w, "tags.multi_session", "true exactly when the inputs carry earlier `sessions`")
            key = json.dumps(i, ensure_ascii=False, sort_keys=True)
            if key in seen.values():
                p(w, "inputs", "same inputs as another scenario")
            seen[s["id"]] = key
            if stem in ("dialogue_base", "dialogue_emotion", "recollection_synthesize"):
                check_history(p, w, "inputs.history", i["history"], stem != "recollection_synthesize")
            if stem == "dialogue_schedule":
                times = check_slots(p, w, "inputs.schedule", i["schedule"])
                check_history(p, w, "inputs.history", i["history"], True)
                n = tmin(i["now"])
                if n is None or (times and n < times[0]): p(w, "inputs.now", "HH:MM at or after the first slot")
            if stem == "recollection_refine" and (not isinstance(i["memory"], str) or len(i["memory"]) < 10):
                p(w, "inputs.memory", "a wordy raw memory note (string)")
            if stem == "recollection_initialize":
                check_memory(p, w, "inputs.memory", i["memory"])
                se = i["session"]
                if not isinstance(se, dict) or set(se) != {"date", "history"} or date(se.get("date")) is None:
                    p(w, "inputs.session", "{date: YYYY-MM-DD, history: [...]}")
                else:
                    check_history(p, w, "inputs.session.history", se["history"], False)
                    if date(i["today"]) is None or date(i["today"]) <= date(se["date"]):
                        p(w, "inputs.today", "YYYY-MM-DD after the session date")
            if stem == "itinerary_basic":
                d = date(i["date"])
                if d is None: p(w, "inputs.date", "YYYY-MM-DD")
                elif i["weekday"] != WEEK[d.weekday()]: p(w, "inputs.weekday", f"{i['date']} is {WEEK[d.weekday()]}")
                if not isinstance(i["hobbies"], list) or not i["hobbies"] or not all(isinstance(h, str) and h for h in i["hobbies"]):
                    p(w, "inputs.hobbies", "a non-empty list of strings")
                if not isinstance(i["memories"], list) or not i["memories"]: p(w, "inputs.memories", "a non-empty list")
                else:
                    for k, m in enumerate(i["memories"]): check_memory(p, w, f"inputs.memories[{k}]", m)
            if stem == "itinerary_middle":
                if not isinstance(i["overview"], str) or len(i["overview"]) < 30: p(w, "inputs.overview", "a day overview paragraph")
                if tmin(i["wake"]) is None: p(w, "inputs.wake", "HH:MM")
            if stem in ("itinerary_advanced", "itinerary_feedback", "itinerary_initialize"):
                times = check_slots(p, w, "inputs.itinerary", i["itinerary"])
                if stem == "itinerary_advanced":
                    if tmin(i["slot"]) not in times: p(w, "inputs.slot", "one of the itinerary's times")
                else:
                    n = tmin(i["now"])
                    if n is None or (times and n < times[0]): p(w, "inputs.now", "HH:MM at or after the first slot")
                if stem == "itinerary_feedback" and (not isinstance(i["feedback"], str) or not i["feedback"].strip()):
                    p(w, "inputs.feedback", "the user's comment")
                if stem == "itinerary_initialize":
                    if not isinstance(i["memories"], list) or not i["memories"]: p(w, "inputs.memories", "a non-empty list")
                    else:
                        for k, m in enumerate(i["memories"]): check_memory(p, w, f"inputs.memories[{k}]", m)
            rec, sub = measures(ref, i)
            rc, lc = caps[stem]
            if rec > rc: p(w, "giveaway", f"ROUGE-L recall of the reference by the inputs {rec:.2f} > cap {rc:.2f}: reword the inputs")
            if sub > lc: p(w, "giveaway", f"longest common substring {sub} chars > cap {lc}: reword the inputs")
            if stem == "recollection_synthesize" and ref.strip() != NKI:
                hist = "".join(t.get("content", "") for t in i["history"] if isinstance(t, dict))
                for m in ref_memories(ref):
                    words = [x for x in toks(m) if x not in STOP]
                    if words:
                        got = sum(1 for x in words if x in hist) / len(words)
                        if got < 0.5:
                            p(w, "inputs.history", f"does not hold the memory `{m}` (only {got:.0%} of its words occur)")
    print(f"checked {sum(counts.values())} scenarios {counts}; {p.n} problem(s); caps {{stem: (recall, lcsub)}} = "
          + json.dumps({k: (round(a, 2), b) for k, (a, b) in caps.items()}))
    return 1 if p.n else 0

if __name__ == "__main__":
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "scenarios", "*.jsonl"))) \
        or sorted(glob.glob(os.path.join(HERE, "..", "scenarios", "*.jsonl")))
    sys.exit(main(files))
