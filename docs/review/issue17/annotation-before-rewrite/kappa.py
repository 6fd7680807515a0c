#!/usr/bin/env python3
"""Cohen's kappa between two tag annotations of the h2htalk scenario suite.

usage: python3 kappa.py [A.jsonl] [B.jsonl]   (default: first.jsonl second.jsonl, in this folder)

Each file: one line per scenario {"id": ..., "tags": {"emotions": [...], "implicit_need": b,
"changing_need": b, "multi_session": b}}.
Boolean tags are compared only over the scenarios of the sub-tasks where TAGS.md lets the flag be
true (table "Which flags can be true in which sub-task"); recollection_initialize counts for
multi_session (there it is always true). Each emotion is a present/absent label over all scenarios.
Flags set true outside their sub-tasks are listed as violations.
"""
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
EMOTIONS = ["loneliness", "grief", "anxiety", "anger", "shame", "joy", "boredom", "sadness", "stress",
            "fear", "guilt", "jealousy", "excitement", "affection", "nostalgia", "frustration", "calm"]
DIALOGUE = {"dialogue_base", "dialogue_emotion", "dialogue_schedule"}
APPLIES = {
    "implicit_need": DIALOGUE | {"itinerary_feedback"},
    "changing_need": DIALOGUE,
    "multi_session": DIALOGUE | {"recollection_synthesize", "recollection_initialize",
                                 "itinerary_basic", "itinerary_initialize"},
}


def load(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        out[r["id"]] = r["tags"]
    return out


def stem(i):
    return i.rsplit("-", 1)[0]


def kappa(pairs):
    """pairs: list of (a, b) booleans. Returns (n, agree, a_pos, b_pos, kappa or None)."""
    n = len(pairs)
    if n == 0:
        return 0, 0, 0, 0, None
    agree = sum(a == b for a, b in pairs)
    pa = sum(a for a, _ in pairs) / n
    pb = sum(b for _, b in pairs) / n
    po = agree / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    k = None if pe == 1 else (po - pe) / (1 - pe)
    return n, agree, sum(a for a, _ in pairs), sum(b for _, b in pairs), k


def fmt(k):
    return "  n/a" if k is None else f"{k:5.2f}"


def main():
    a_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "first.jsonl")
    b_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "second.jsonl")
    A, B = load(a_path), load(b_path)
    if set(A) != set(B):
        sys.exit(f"id sets differ: {sorted(set(A) ^ set(B))[:10]}")
    ids = list(A)
    print(f"A = {os.path.basename(a_path)}, B = {os.path.basename(b_path)}, {len(ids)} scenarios\n")
    head = f"{'tag':<16}{'n':>5}{'agree':>7}{'disagr':>7}{'A=1':>6}{'B=1':>6}{'%agree':>8}{'kappa':>7}"
    print("Boolean tags (over the sub-tasks where the flag can apply)")
    print(head)
    for tag, stems in APPLIES.items():
        pairs = [(A[i][tag], B[i][tag]) for i in ids if stem(i) in stems]
        n, ag, ap, bp, k = kappa(pairs)
        print(f"{tag:<16}{n:>5}{ag:>7}{n-ag:>7}{ap:>6}{bp:>6}{100*ag/n:>7.1f}%{fmt(k):>7}")
        if tag == "multi_session":
            pairs = [(A[i][tag], B[i][tag]) for i in ids
                     if stem(i) in stems and stem(i) != "recollection_initialize"]
            n, ag, ap, bp, k = kappa(pairs)
            print(f"{'  (w/o rec_init)':<16}{n:>5}{ag:>7}{n-ag:>7}{ap:>6}{bp:>6}{100*ag/n:>7.1f}%{fmt(k):>7}")
    print("\nEmotions (present/absent, over all scenarios)")
    print(head)
    ks = []
    tot_dis = 0
    for e in EMOTIONS:
        pairs = [(e in A[i]["emotions"], e in B[i]["emotions"]) for i in ids]
        n, ag, ap, bp, k = kappa(pairs)
        tot_dis += n - ag
        if k is not None:
            ks.append(k)
        print(f"{e:<16}{n:>5}{ag:>7}{n-ag:>7}{ap:>6}{bp:>6}{100*ag/n:>7.1f}%{fmt(k):>7}")
    mean = sum(ks) / len(ks) if ks else float("nan")
    print(f"{'mean over ' + str(len(ks)):<16}{'':>5}{'':>7}{tot_dis:>7}{'':>6}{'':>6}{'':>8}{mean:>7.2f}")
    exact = sum(set(A[i]["emotions"]) == set(B[i]["emotions"]) for i in ids)
    print(f"\nscenarios with identical emotion sets: {exact}/{len(ids)}")
    # per sub-task emotion-set agreement
    print("\nper sub-task: identical emotion sets / boolean disagreements (applicable flags)")
    for s in sorted({stem(i) for i in ids}, key=lambda s: ids.index(next(i for i in ids if stem(i) == s))):
        sub = [i for i in ids if stem(i) == s]
        same = sum(set(A[i]["emotions"]) == set(B[i]["emotions"]) for i in sub)
        bd = {t: sum(A[i][t] != B[i][t] for i in sub) for t in APPLIES if s in APPLIES[t]}
        print(f"  {s:<26}{same:>3}/{len(sub):<3} " + ", ".join(f"{t} {v}" for t, v in bd.items()))
    viol = [(i, t, w) for i in ids for t in APPLIES for w, X in (("A", A), ("B", B))
            if X[i][t] and stem(i) not in APPLIES[t]]
    viol += [(i, "multi_session=false", w) for i in ids for w, X in (("A", A), ("B", B))
             if stem(i) == "recollection_initialize" and not X[i]["multi_session"]]
    print(f"\nflags outside their sub-tasks (TAGS.md table): {len(viol)}")
    for v in viol:
        print("  ", *v)


if __name__ == "__main__":
    main()
