"""Builds /work/sim-staging/profiles/<id>.json from the four data modules in this folder.

Each data module defines PROFILES: a dict attachment -> list of 6 entries
(user, hidden_need, changed_need_text, [fact_same, fact_next, fact_three]),
each fact being (id, text, question, [answer_keywords]). The direction of each
profile and its schedule (told/asked/change turns) are assigned here, so that
the directions are spread evenly and the schedules vary.
"""
import importlib, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "profiles")
DIRS = ["comfort_to_plan", "plan_to_comfort", "company_to_space", "space_to_company",
        "advice_to_listening", "listening_to_advice", "distraction_to_depth", "depth_to_distraction"]
ATT = ["secure", "anxious", "avoidant", "fearful"]
GROUPS = [("zh", "shen-yan", "shen-yan", "zh_shen"), ("zh", "xia-xiaoman", "xia-xiaoman", "zh_xia"),
          ("en", "shen-yan", "shen-yan-en", "en_shen"), ("en", "xia-xiaoman", "xia-xiaoman-en", "en_xia")]
# (turns_per_session, same (told, asked), next (told, asked), three (told, asked), change)
SCHED = [
    (3, ((3, 1), (3, 3)), ((1, 2), (2, 2)), ((1, 1), (4, 2)), (2, 3)),
    (4, ((1, 3), (1, 4)), ((2, 1), (3, 2)), ((1, 2), (4, 3)), (3, 1)),
    (3, ((2, 1), (2, 3)), ((3, 1), (4, 3)), ((1, 3), (4, 1)), (2, 2)),
    (4, ((4, 1), (4, 3)), ((1, 3), (2, 2)), ((1, 1), (4, 4)), (3, 2)),
    (3, ((1, 1), (1, 3)), ((2, 2), (3, 1)), ((1, 2), (4, 3)), (3, 2)),
    (4, ((2, 1), (2, 4)), ((3, 2), (4, 4)), ((1, 1), (4, 2)), (2, 3)),
]
DIST = ["same_session", "next_session", "three_sessions"]


def at(p):
    return {"session": p[0], "turn": p[1]}


def main():
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]
    for g, (lang, pid, card, mod) in enumerate(GROUPS):
        if only and mod not in only:
            continue
        data = importlib.import_module(mod).PROFILES
        for a, att in enumerate(ATT):
            entries = data[att]
            assert len(entries) == 6, (mod, att, len(entries))
            for k, (user, hidden, need, facts) in enumerate(entries):
                tps, *fs, change = SCHED[(k + a) % 6]
                pid_full = f"{lang}-{pid}-{att}-{k + 1:02d}"
                assert len(facts) == 3, pid_full
                prof = {
                    "id": pid_full,
                    "lang": lang,
                    "companion_persona": card,
                    "attachment": att,
                    "user": user,
                    "hidden_need": hidden,
                    "changed_need": {"at": at(change), "need": need, "direction": DIRS[(a * 6 + k + 2 * g) % 8]},
                    "facts": [
                        {"id": f[0], "text": f[1], "told": at(s[0]), "asked": at(s[1]), "question": f[2],
                         "answer_keywords": f[3], "distance": d}
                        for f, s, d in zip(facts, fs, DIST)
                    ],
                    "sessions": 4,
                    "turns_per_session": tps,
                }
                text = json.dumps(prof, ensure_ascii=False, indent=2)
                # the layout of suites/simulator/*.json: points and keyword lists on one line
                text = re.sub(r'\{\s*"session": (\d+),\s*"turn": (\d+)\s*\}', r'{"session": \1, "turn": \2}', text)
                text = re.sub(r'"answer_keywords": \[\s*([^\]]*?)\s*\]',
                              lambda m: '"answer_keywords": [' + re.sub(r',\s+', ', ', m.group(1)) + ']', text)
                with open(os.path.join(OUT, pid_full + ".json"), "w", encoding="utf-8") as fh:
                    fh.write(text + "\n")


if __name__ == "__main__":
    main()
