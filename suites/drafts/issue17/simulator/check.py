#!/usr/bin/env python3
"""Validates the simulator profiles in profiles/ against README-extension.md and prints the counts.

Usage: python3 check.py [PROFILE_DIR] [--personas DIR] [--min-per-cell N] [--min-per-direction N]
Exit status 0 when every profile passes and every count is met, 1 otherwise.
"""
import argparse, collections, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
LANGS = ("zh", "en")
PERSONAS = ("shen-yan", "xia-xiaoman")          # base names; the en card is <base>-en
ATTACHMENTS = ("secure", "anxious", "avoidant", "fearful")
DIRECTIONS = ("comfort_to_plan", "plan_to_comfort", "company_to_space", "space_to_company",
              "advice_to_listening", "listening_to_advice", "distraction_to_depth", "depth_to_distraction")
DISTANCES = ("same_session", "next_session", "three_sessions")
TOP_KEYS = {"id", "lang", "companion_persona", "attachment", "user", "hidden_need", "changed_need", "facts",
            "sessions", "turns_per_session"}
CHANGE_KEYS = {"at", "need", "direction"}
AT_KEYS = {"session", "turn"}
FACT_KEYS = {"id", "text", "told", "asked", "question", "answer_keywords", "distance"}
ID_RE = re.compile(r"^(zh|en)-(shen-yan|xia-xiaoman)-(secure|anxious|avoidant|fearful)-(\d{2})$")
FACT_ID_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
CJK = re.compile(r"[\u3400-\u9fff]")
# the English locale is the one of the project's English material (suites/safety/sap_safety.en.jsonl):
# the United States. Money is in dollars ($, dollars, bucks, cents are fine); no yuan/RMB, no WeChat,
# no cities or districts of mainland China in pinyin, no other currency, no British spelling.
# (Pounds stay allowed: in the US they are a weight, and the sign £ is rejected.)
CHINA_LOCALE = re.compile(
    r"\b(yuan|rmb|cny|renminbi|kuai|wechat|weixin|alipay|weibo|taobao|didi)\b|¥|元|微信"
    r"|\b(beijing|shanghai|guangzhou|shenzhen|chengdu|chongqing|hangzhou|wuhan|nanjing|tianjin|xi'?an|suzhou"
    r"|changsha|zhengzhou|qingdao|dalian|shenyang|harbin|changchun|jinan|hefei|fuzhou|xiamen|kunming|guiyang"
    r"|nanning|lanzhou|urumqi|hohhot|taiyuan|shijiazhuang|nanchang|ningbo|wenzhou|foshan|dongguan|zhuhai"
    r"|shantou|sanya|haikou|lhasa|xining|yinchuan|wuxi|changzhou|xuzhou|yangzhou|zhuzhou|leshan|mianyang"
    r"|deyang|ya'?an|mianzhu|luoyang|kaifeng|guilin|lijiang|weihai|yantai|quanzhou|jilin|xiaogan|fuling"
    r"|zhoushan|zhangqiu|qujing|anji|anqing|meizhou|jingzhou|hankou|shunde|gulangyu|yongding|dongshan"
    r"|pazhou|tianhe|haizhu|gulou|wangjing|longgang|dongcheng|jing'?an|tianzifang|huaqiang|zengcuoan"
    r"|dianchi|jialing|songhua|changbai|baotu|kuanzhai|jiqing|lingnan|qiantang|huangpu|pudong)\b", re.I)
OTHER_MONEY = re.compile(r"[£€]|\b(quid|euros?|pence)\b", re.I)
BRITISH = re.compile(
    r"\b(mum|mums|mummy|neighbour\w*|favourit\w*|colour\w*|behaviour\w*|labour\w*|centre|centres|theatre"
    r"|paediatr\w*|realis(e|es|ed|ing)|apologis(e|es|ed|ing)|organis(e|es|ed|ing|ation)|prioritis(e|es|ed|ing)"
    r"|practis(e|es|ed|ing)|counsell\w*|cvs?|flatmates?|chillis?|chillies|lorry|lorries|motorway|resit|maths"
    r"|programme|programmes|grey|cancelled|cancelling|travelled|travelling)\b", re.I)
MAX_EVENTS_PER_TURN = 2
SHOWS = {"zh": ("表现为",), "en": ("It shows",)}   # how the changed need shows, never announced   # tell / ask / change at one user turn


def sentences(text, lang):
    if lang == "zh":
        parts = re.split(r"[。！？!?]+", text)
    else:
        parts = re.split(r"(?<=[.!?])\s+(?=[A-Z\"'(])", text.strip())
    return [p for p in parts if p.strip()]


def check_at(errs, where, v, p):
    if not isinstance(v, dict) or set(v) != AT_KEYS:
        errs.append(f"{where}: must be an object with exactly the keys {sorted(AT_KEYS)}")
        return None
    s, t = v["session"], v["turn"]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (s, t)):
        errs.append(f"{where}: session and turn must be integers")
        return None
    ok_s = isinstance(p.get("sessions"), int) and 1 <= s <= p["sessions"]
    ok_t = isinstance(p.get("turns_per_session"), int) and 1 <= t <= p["turns_per_session"]
    if not (ok_s and ok_t):
        errs.append(f"{where}: ({s}, {t}) is outside sessions 1-{p.get('sessions')}, turns 1-{p.get('turns_per_session')}")
        return None
    return (s, t)


def nonempty_str(errs, where, v):
    if not isinstance(v, str) or not v.strip():
        errs.append(f"{where}: must be a non-empty string")
        return False
    return True


card_names = {}
card_texts = {}   # the whole card, lower-cased: a keyword found there is no sign of recall


def companion_names(card):
    """The card's full name, and its given name where that is distinctive (小满, Xiaoman)."""
    name = card_names.get(card, "")
    out = [name] if name else []
    given = name.split()[-1] if " " in name else name[1:]
    if (" " in name and len(given) >= 5) or (" " not in name and len(given) >= 2):
        out.append(given)
    return out


def check_profile(path, p, cards):
    errs = []
    stem = os.path.splitext(os.path.basename(path))[0]
    if not isinstance(p, dict):
        return ["the file must hold one JSON object"]
    keys = set(p)
    if keys != TOP_KEYS:
        if TOP_KEYS - keys:
            errs.append(f"missing keys: {sorted(TOP_KEYS - keys)}")
        if keys - TOP_KEYS:
            errs.append(f"unknown keys: {sorted(keys - TOP_KEYS)}")
        return errs
    if p["id"] != stem:
        errs.append(f"id `{p['id']}` must equal the file name `{stem}`")
    m = ID_RE.match(str(p["id"]))
    lang = p["lang"]
    if lang not in LANGS:
        errs.append(f"lang `{lang}` must be one of {LANGS}")
    if p["attachment"] not in ATTACHMENTS:
        errs.append(f"attachment `{p['attachment']}` must be one of {ATTACHMENTS}")
    card = p["companion_persona"]
    if card not in cards:
        errs.append(f"companion_persona `{card}` is not a persona card ({sorted(cards)})")
    elif cards[card] != lang:
        errs.append(f"companion_persona `{card}` is in `{cards[card]}`, the profile in `{lang}`")
    if not m:
        errs.append(f"id `{p['id']}` must look like <lang>-<persona>-<attachment>-NN, e.g. zh-shen-yan-anxious-03")
    else:
        ilang, ibase, iatt, _ = m.groups()
        want_card = ibase if ilang == "zh" else ibase + "-en"
        if (ilang, iatt, want_card) != (lang, p["attachment"], card):
            errs.append(f"id `{p['id']}` asks for lang `{ilang}`, attachment `{iatt}`, companion_persona "
                        f"`{want_card}`; the profile has `{lang}`, `{p['attachment']}`, `{card}`")
    if p["sessions"] != 4 or isinstance(p["sessions"], bool):
        errs.append(f"sessions must be 4 (is {p['sessions']!r})")
    if p["turns_per_session"] not in (3, 4) or isinstance(p["turns_per_session"], bool):
        errs.append(f"turns_per_session must be 3 or 4 (is {p['turns_per_session']!r})")
    texts = []
    for k in ("user", "hidden_need"):
        if nonempty_str(errs, k, p[k]):
            texts.append((k, p[k]))
    if isinstance(p["user"], str) and card in card_names:
        if not any(n in p["user"] for n in companion_names(card)):
            errs.append(f"user: the biography names the companion ({' or '.join(companion_names(card))}) "
                        "and how the user is related to it")
    if isinstance(p["user"], str):
        n = len(sentences(p["user"], lang))
        if not 4 <= n <= 6:
            errs.append(f"user: a biography of 4-6 sentences (found {n})")
    events = collections.Counter()
    cn = p["changed_need"]
    change = None
    if not isinstance(cn, dict) or set(cn) != CHANGE_KEYS:
        errs.append(f"changed_need: must have exactly the keys {sorted(CHANGE_KEYS)}")
    else:
        change = check_at(errs, "changed_need.at", cn["at"], p)
        if change == (1, 1):
            errs.append("changed_need.at: the need must change after the first turn")
        if change:
            events[change] += 1
        if nonempty_str(errs, "changed_need.need", cn["need"]):
            texts.append(("changed_need.need", cn["need"]))
        if isinstance(cn["need"], str) and not any(m in cn["need"] for m in SHOWS.get(lang, ())):
            errs.append(f"changed_need.need: say how the change shows in the user's talk "
                        f"(a clause starting {' or '.join(SHOWS.get(lang, ()))})")
        if cn["direction"] not in DIRECTIONS:
            errs.append(f"changed_need.direction `{cn['direction']}` must be one of {DIRECTIONS}")
    facts = p["facts"]
    if not isinstance(facts, list) or len(facts) != 3:
        errs.append("facts: exactly 3 facts")
        facts = facts if isinstance(facts, list) else []
    seen_ids, seen_dist = set(), []
    for i, f in enumerate(facts):
        w = f"facts[{i}]"
        if not isinstance(f, dict) or set(f) != FACT_KEYS:
            got = set(f) if isinstance(f, dict) else set()
            errs.append(f"{w}: must have exactly the keys {sorted(FACT_KEYS)} "
                        f"(missing {sorted(FACT_KEYS - got)}, unknown {sorted(got - FACT_KEYS)})")
            continue
        if not isinstance(f["id"], str) or not FACT_ID_RE.match(f["id"]):
            errs.append(f"{w}.id: a short lowercase slug ([a-z][a-z0-9_-]*)")
        elif f["id"] in seen_ids:
            errs.append(f"{w}.id: `{f['id']}` is used twice")
        seen_ids.add(f["id"])
        for k in ("text", "question"):
            if nonempty_str(errs, f"{w}.{k}", f[k]):
                texts.append((f"{w}.{k}", f[k]))
        told = check_at(errs, f"{w}.told", f["told"], p)
        asked = check_at(errs, f"{w}.asked", f["asked"], p)
        d = f["distance"]
        seen_dist.append(d)
        if d not in DISTANCES:
            errs.append(f"{w}.distance `{d}` must be one of {DISTANCES}")
        if told and asked:
            events[told] += 1
            events[asked] += 1
            if asked <= told:
                errs.append(f"{w}: asked {asked} must come after told {told}")
            gap = asked[0] - told[0]
            if d == "same_session" and gap != 0:
                errs.append(f"{w}: same_session needs asked.session == told.session (gap {gap})")
            if d == "next_session" and gap != 1:
                errs.append(f"{w}: next_session needs asked.session == told.session + 1 (gap {gap})")
            if d == "three_sessions" and not (told[0] == 1 and asked[0] == 4):
                errs.append(f"{w}: three_sessions needs told in session 1 and asked in session 4")
        kws = f["answer_keywords"]
        if not isinstance(kws, list) or not kws or not all(isinstance(k, str) and k.strip() for k in kws):
            errs.append(f"{w}.answer_keywords: one or more non-empty strings")
            continue
        if len({k.lower() for k in kws}) != len(kws):
            errs.append(f"{w}.answer_keywords: duplicates (case-insensitive)")
        if isinstance(f["question"], str):
            leak = [k for k in kws if k.lower() in f["question"].lower()]
            if leak:
                errs.append(f"{w}.question gives the answer away: contains {leak}")
        if isinstance(f["text"], str) and not any(k.lower() in f["text"].lower() for k in kws):
            errs.append(f"{w}: no answer keyword occurs in the fact's text")
        if lang == "en":
            short = [k for k in kws if len(k) < 3 and not k.isdigit()]
            if short:
                errs.append(f"{w}.answer_keywords: English keywords of under 3 characters match by accident: {short}")
    # a keyword shows recall only if nothing else in the profile would lead the user to say it
    for i, f in enumerate(facts):
        if not (isinstance(f, dict) and isinstance(f.get("answer_keywords"), list)):
            continue
        elsewhere = {"user": p["user"], "hidden_need": p["hidden_need"]}
        if isinstance(cn, dict):
            elsewhere["changed_need.need"] = cn.get("need")
        for j, g in enumerate(facts):
            if j != i and isinstance(g, dict):
                elsewhere[f"facts[{j}]"] = f"{g.get('text')} {g.get('question')}"
        for k in f["answer_keywords"]:
            for where, t in elsewhere.items():
                if isinstance(k, str) and isinstance(t, str) and k.strip() and k.lower() in t.lower():
                    errs.append(f"facts[{i}].answer_keywords: `{k}` also occurs in {where}")
        for k in f["answer_keywords"]:
            if isinstance(k, str) and k.strip() and k.lower() in card_texts.get(card, ""):
                errs.append(f"facts[{i}].answer_keywords: `{k}` occurs in the companion's card `{card}`")
    if sorted(seen_dist) != sorted(DISTANCES) and len(facts) == 3:
        errs.append(f"facts: one fact per distance {DISTANCES} (found {seen_dist})")
    busy = [at for at, n in events.items() if n > MAX_EVENTS_PER_TURN]
    if busy:
        errs.append(f"more than {MAX_EVENTS_PER_TURN} tell/ask/change events at one turn: {sorted(busy)}")
    for where, t in texts:
        if lang == "zh" and not CJK.search(t):
            errs.append(f"{where}: a zh profile writes Chinese")
        if lang == "en" and CJK.search(t):
            errs.append(f"{where}: an en profile writes no Chinese characters")
        if lang == "en" and CHINA_LOCALE.search(t):
            errs.append(f"{where}: the English locale is the United States; no yuan/RMB, WeChat or Chinese "
                        f"city names (found `{CHINA_LOCALE.search(t).group(0)}`)")
        if lang == "en" and OTHER_MONEY.search(t):
            errs.append(f"{where}: money in the English locale is dollars (found `{OTHER_MONEY.search(t).group(0)}`)")
        if lang == "en" and BRITISH.search(t):
            errs.append(f"{where}: the English locale uses US spelling and words (found `{BRITISH.search(t).group(0)}`)")
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=os.path.join(HERE, "profiles"))
    ap.add_argument("--personas", default="/work/main/suites/personas")
    ap.add_argument("--min-per-cell", type=int, default=6)
    ap.add_argument("--min-per-direction", type=int, default=10)
    a = ap.parse_args()
    cards = {}
    for name in os.listdir(a.personas):
        if name.endswith(".json"):
            with open(os.path.join(a.personas, name), encoding="utf-8") as fh:
                c = json.load(fh)
            cards[c["id"]] = c["lang"]
            card_names[c["id"]] = c["name"]
            card_texts[c["id"]] = json.dumps(c, ensure_ascii=False).lower()
    failed = 0
    cells = collections.Counter()
    dirs = collections.Counter()
    dir_by_att = collections.Counter()
    dist_sessions = collections.Counter()
    bios, ids, users = {}, {}, {}
    names = sorted(n for n in os.listdir(a.dir) if n.endswith(".json"))
    for name in names:
        path = os.path.join(a.dir, name)
        try:
            with open(path, encoding="utf-8") as fh:
                p = json.load(fh)
        except (OSError, ValueError) as e:
            print(f"FAIL {name}: not valid JSON: {e}")
            failed += 1
            continue
        errs = check_profile(path, p, cards)
        if isinstance(p, dict):
            if p.get("id") in ids:
                errs.append(f"id `{p.get('id')}` also in {ids[p.get('id')]}")
            ids.setdefault(p.get("id"), name)
            bio = p.get("user")
            if isinstance(bio, str):
                key = re.sub(r"\s+", "", bio)
                if key in bios:
                    errs.append(f"user: the same biography as {bios[key]}")
                bios.setdefault(key, name)
                who = re.split(r"[，,]", bio, maxsplit=1)[0].strip()
                if who in users:
                    errs.append(f"user: `{who}` (the text before the first comma) is also the user of {users[who]}")
                users.setdefault(who, name)
        if errs:
            failed += 1
            for e in errs:
                print(f"FAIL {name}: {e}")
            continue
        base = p["companion_persona"].removesuffix("-en")
        cells[(p["attachment"], p["lang"], base)] += 1
        dirs[p["changed_need"]["direction"]] += 1
        dir_by_att[(p["attachment"], p["changed_need"]["direction"])] += 1
        for f in p["facts"]:
            dist_sessions[(f["distance"], f["told"]["session"])] += 1
    cols = [(l, b) for l in LANGS for b in PERSONAS]
    print(f"\n{len(names)} files, {len(names) - failed} valid, {failed} failing\n")
    head = f"{'attachment':<10} | " + " | ".join(f"{l}/{b:<11}" for l, b in cols) + " | total"
    print(head)
    print("-" * len(head))
    short = []
    for att in ATTACHMENTS:
        row = [cells[(att, l, b)] for l, b in cols]
        short += [(att, l, b, n) for (l, b), n in zip(cols, row) if n < a.min_per_cell]
        print(f"{att:<10} | " + " | ".join(f"{n:>14}" for n in row) + f" | {sum(row):>5}")
    tot = [sum(cells[(att, l, b)] for att in ATTACHMENTS) for l, b in cols]
    print(f"{'total':<10} | " + " | ".join(f"{n:>14}" for n in tot) + f" | {sum(tot):>5}")
    print("\ndirection              count   " + " ".join(f"{x[:8]:>8}" for x in ATTACHMENTS))
    low = []
    for d in DIRECTIONS:
        if dirs[d] < a.min_per_direction:
            low.append((d, dirs[d]))
        print(f"{d:<22} {dirs[d]:>5}   " + " ".join(f"{dir_by_att[(x, d)]:>8}" for x in ATTACHMENTS))
    print("\nfacts by distance and session told: " +
          ", ".join(f"{d}@s{s}={n}" for (d, s), n in sorted(dist_sessions.items())))
    for att, l, b, n in short:
        print(f"FAIL count: {att} x {l} x {b} has {n} valid profiles (needs {a.min_per_cell})")
    for d, n in low:
        print(f"FAIL count: direction {d} has {n} valid profiles (needs {a.min_per_direction})")
    ok = failed == 0 and not short and not low
    print("\nPASS" if ok else "\nFAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
