import json, re, sys, glob, os
SC = "/work/suite-staging/suites/scenarios"
CATS = set("姓名 性别 年龄 位置 生日 星座 性格 MBTI 情绪状态 职业 睡眠习惯 健康状况 心情 亲友关系 食物 娱乐 旅行 追星 爱好 情感生活 学业 工作 虚拟互动 其他事件".split())
EMO = set("loneliness grief anxiety anger shame joy boredom sadness stress fear guilt jealousy excitement affection nostalgia frustration calm".split())
KEYS = {"dialogue_base": {"history"}, "dialogue_emotion": {"history"}, "dialogue_schedule": {"schedule", "now", "history"},
        "recollection_synthesize": {"history"}, "recollection_refine": {"memory"}, "recollection_initialize": {"memory", "session", "today"},
        "itinerary_basic": {"date", "weekday", "hobbies", "memories"}, "itinerary_middle": {"overview", "wake"},
        "itinerary_advanced": {"itinerary", "slot"}, "itinerary_feedback": {"itinerary", "now", "feedback"},
        "itinerary_initialize": {"itinerary", "now", "memories"}}
SESS = {"dialogue_base", "dialogue_emotion", "dialogue_schedule", "recollection_synthesize"}
ALLOWED = {"implicit_need": {"dialogue_base", "dialogue_emotion", "dialogue_schedule", "itinerary_feedback"},
           "changing_need": {"dialogue_base", "dialogue_emotion", "dialogue_schedule"},
           "multi_session": {"dialogue_base", "dialogue_emotion", "dialogue_schedule", "recollection_synthesize",
                             "recollection_initialize", "itinerary_basic", "itinerary_initialize"}}
ANNOUNCE = ["其实", "算了", "不用", "不想", "别"]
BODY = ["马上过去", "过去陪你", "来接你", "去接你", "去你家", "来你家", "到你家", "我现在过来", "推门进来", "我带粥过来", "在你家门口", "陪你去医院"]
def L(t): return len(re.sub(r"\s", "", t))
def Lnoparen(t): return L(re.sub(r"（[^）]*）|\([^)]*\)", "", t))
def tm(x): return bool(re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", x))
def date(x): return bool(re.fullmatch(r"\d{4}-\d\d-\d\d", x))
def turns(h, who):
    assert isinstance(h, list) and h, f"{who}: empty history"
    for t in h:
        assert set(t) == {"role", "content"} and t["role"] in ("user", "assistant") and isinstance(t["content"], str) and t["content"].strip(), f"{who}: bad turn {t}"
def mem(m, who):
    assert set(m) == {"content", "category", "importance"}, f"{who}: mem keys"
    assert m["category"] in CATS and m["importance"] in (0, 1, 2), f"{who}: mem {m}"
def sched(s, who):
    assert isinstance(s, list) and s
    for x in s: assert set(x) == {"time", "activity"} and tm(x["time"]) and x["activity"], f"{who}: slot {x}"
    ts = [x["time"] for x in s]; assert ts == sorted(ts) and len(set(ts)) == len(ts), f"{who}: times"
def check_file(f, hidden=()):
    stem = os.path.basename(f)[:-6]; errs = []; ids = []
    for n, line in enumerate(open(f, encoding="utf-8"), 1):
        try:
            s = json.loads(line); who = s.get("id"); ids.append(who)
            assert set(s) == {"id", "task", "persona", "lang", "inputs", "reference", "tags"}, "keys"
            assert who == f"{stem}-{n:03d}" and s["task"] == stem and s["lang"] == "zh" and s["persona"] in ("shen-yan", "xia-xiaoman")
            I = s["inputs"]; r = s["reference"]; t = s["tags"]
            assert set(t) == {"emotions", "implicit_need", "changing_need", "multi_session", "risk"} and t["risk"] is None
            assert t["emotions"] and set(t["emotions"]) <= EMO, f"emotions {t['emotions']}"
            for k in ALLOWED:
                assert isinstance(t[k], bool)
                if t[k]: assert stem in ALLOWED[k], f"{k} not applicable"
            ks = set(I)
            if stem in SESS and ("sessions" in I or "date" in I):
                assert "sessions" in I and "date" in I, "sessions/date together"
                ks -= {"sessions", "date"}
                ds = [x["date"] for x in I["sessions"]] + [I["date"]]
                assert all(date(d) for d in ds) and ds == sorted(ds) and len(set(ds)) == len(ds), f"dates {ds}"
                for x in I["sessions"]:
                    assert set(x) == {"date", "history"}; turns(x["history"], who)
            assert ks == KEYS[stem], f"inputs keys {set(I)}"
            if stem in SESS:
                turns(I["history"], who)
                if stem != "recollection_synthesize": assert I["history"][-1]["role"] == "user", "last turn not user"
                if t["multi_session"]: assert "sessions" in I, "multi_session without sessions"
                if "sessions" in I and stem != "recollection_synthesize": assert t["multi_session"], "sessions but not multi_session"
            if stem.startswith("dialogue"):
                for b in BODY: assert b not in r, f"bodily presence: {b}"
            if stem == "dialogue_base":
                assert Lnoparen(r) <= 30 and re.search(r"（[^）]+）", r), f"ref len {Lnoparen(r)}"
            if stem == "dialogue_emotion": assert L(r) <= 80 and re.search(r"（[^）]+）", r), f"ref {L(r)}"
            if stem == "dialogue_schedule":
                sched(I["schedule"], who); assert tm(I["now"]) and I["now"] >= I["schedule"][0]["time"], "now"
                assert L(r) <= 80, f"ref {L(r)}"
            if who in hidden:
                us = " ".join(x["content"] for x in I["history"] if x["role"] == "user")
                us2 = re.sub("特别|别人|分别|区别|告别|离别|级别|类别|性别|别墅|别扭|别的|差别|识别|个别", "", us)
                for w in ANNOUNCE: assert w not in us2, f"hidden change uses {w}"
            if stem == "recollection_synthesize":
                if r != "未提取到关键信息。":
                    for b in r.split("\n\n"):
                        m = re.fullmatch(r"记忆内容：(.+)\n记忆类别：(.+)\n记忆重要性：([012])", b)
                        assert m and L(m.group(1)) <= 20 and m.group(2) in CATS, f"block {b!r}"
            if stem == "recollection_refine": assert isinstance(I["memory"], str) and L(r) <= 50, f"ref {L(r)}"
            if stem == "recollection_initialize":
                mem(I["memory"], who); assert set(I["session"]) == {"date", "history"}; turns(I["session"]["history"], who)
                assert date(I["today"]) and I["today"] > I["session"]["date"]; assert L(r) <= 80, f"ref {L(r)}"
            if stem == "itinerary_basic":
                assert date(I["date"]) and I["weekday"].startswith("星期") and I["hobbies"]
                for m in I["memories"]: mem(m, who)
                assert 80 <= L(r) <= 200, f"ref {L(r)}"
            if stem == "itinerary_middle":
                assert tm(I["wake"]) and I["overview"]
                plan, _, note = r.partition("\n\n")
                if note: assert note.startswith("（") and note.endswith("）") and "\n" not in note, "note"
                lines = plan.split("\n"); assert 4 <= len(lines) <= 8, f"{len(lines)} lines"
                ts = []
                for x in lines:
                    m = re.fullmatch(r"(\d\d:\d\d) (.+)", x); assert m and tm(m.group(1)) and L(m.group(2)) <= 12, f"line {x!r}"
                    ts.append(m.group(1))
                assert ts == sorted(ts) and len(set(ts)) == len(ts) and ts[-1] >= "20:00", "times"
            if stem == "itinerary_advanced":
                sched(I["itinerary"], who); tl = [x["time"] for x in I["itinerary"]]; assert I["slot"] in tl
                i = tl.index(I["slot"]); end = tl[i + 1] if i + 1 < len(tl) else "24:00"
                lines = r.split("\n"); assert 3 <= len(lines) <= 6, f"{len(lines)} lines"
                prev = ""
                for k, x in enumerate(lines, 1):
                    m = re.match(r"(\d)\. (\d\d:\d\d)", x); assert m and int(m.group(1)) == k and tm(m.group(2)), f"line {x!r}"
                    assert I["slot"] <= m.group(2) < end and m.group(2) > prev, f"time {m.group(2)} outside {I['slot']}-{end}"; prev = m.group(2)
            if stem in ("itinerary_feedback", "itinerary_initialize"):
                sched(I["itinerary"], who); assert tm(I["now"]) and I["now"] >= I["itinerary"][0]["time"]
                assert L(r) <= (50 if stem == "itinerary_feedback" else 80), f"ref {L(r)}"
                if stem == "itinerary_initialize":
                    for m in I["memories"]: mem(m, who)
        except AssertionError as e:
            errs.append(f"{f.split('/')[-1]}:{n} {who}: {e}")
        except Exception as e:
            errs.append(f"{f.split('/')[-1]}:{n}: {type(e).__name__} {e}")
    return errs, ids
if __name__ == "__main__":
    files = sys.argv[1:] or sorted(glob.glob(f"{SC}/*.jsonl"))
    allids = []; bad = 0
    for f in files:
        stem = os.path.basename(f)[:-6]
        hp = f"/work/suite-staging/work/hidden_{stem}.json"
        hidden = set(json.load(open(hp))) if os.path.exists(hp) else set()
        e, ids = check_file(f, hidden); allids += ids; bad += len(e)
        for x in e: print(x)
        print(f"{stem}: {len(ids)} scenarios, {len(e)} errors")
    assert len(allids) == len(set(allids)), "duplicate ids"
