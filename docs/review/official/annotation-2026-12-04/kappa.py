#!/usr/bin/env python3
"""Cohen's kappa between two tag annotations of official dialogue items (the method of
docs/review/issue17/annotation-before-rewrite/kappa.py, for lines {"id", "emotions",
"implicit_need", "changing_need"}: kappa per boolean flag, per emotion label as present/absent over
all items, and the mean over the emotion labels).

usage: python3 kappa.py [A.jsonl] [B.jsonl]   (default: first.jsonl second.jsonl in this folder)
"""
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
EMOTIONS = ["loneliness", "grief", "anxiety", "anger", "shame", "joy", "boredom", "sadness", "stress",
            "fear", "guilt", "jealousy", "excitement", "affection", "nostalgia", "frustration", "calm"]
FLAGS = ["implicit_need", "changing_need"]


def load(path):
    return {r["id"]: r for r in map(json.loads, open(path, encoding="utf-8"))}


def kappa(pairs):
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


def stem(i):
    return i[len("official-"):].rsplit("-", 1)[0]


def main():
    a_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "first.jsonl")
    b_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "second.jsonl")
    A, B = load(a_path), load(b_path)
    if set(A) != set(B):
        sys.exit(f"id sets differ: {sorted(set(A) ^ set(B))[:10]}")
    ids = list(A)
    print(f"A = {os.path.basename(a_path)}, B = {os.path.basename(b_path)}, {len(ids)} scenarios\n")
    head = f"{'tag':<16}{'n':>5}{'agree':>7}{'disagr':>7}{'A=1':>6}{'B=1':>6}{'%agree':>8}{'kappa':>7}"
    print("Boolean tags (all three dialogue sub-tasks, where both flags can apply)")
    print(head)
    for tag in FLAGS:
        n, ag, ap, bp, k = kappa([(A[i][tag], B[i][tag]) for i in ids])
        print(f"{tag:<16}{n:>5}{ag:>7}{n-ag:>7}{ap:>6}{bp:>6}{100*ag/n:>7.1f}%{fmt(k):>7}")
    print("\nEmotions (present/absent, over all scenarios)")
    print(head)
    ks, tot = [], 0
    for e in EMOTIONS:
        n, ag, ap, bp, k = kappa([(e in A[i]["emotions"], e in B[i]["emotions"]) for i in ids])
        tot += n - ag
        if k is not None:
            ks.append(k)
        print(f"{e:<16}{n:>5}{ag:>7}{n-ag:>7}{ap:>6}{bp:>6}{100*ag/n:>7.1f}%{fmt(k):>7}")
    mean = sum(ks) / len(ks) if ks else float("nan")
    print(f"{'mean over ' + str(len(ks)):<16}{'':>5}{'':>7}{tot:>7}{'':>6}{'':>6}{'':>8}{mean:>7.2f}")
    exact = sum(set(A[i]["emotions"]) == set(B[i]["emotions"]) for i in ids)
    print(f"\nscenarios with identical emotion sets: {exact}/{len(ids)}")
    print("\nper sub-task: n, identical emotion sets, kappa implicit_need / changing_need")
    for s in ["dialogue_base", "dialogue_emotion", "dialogue_schedule"]:
        sub = [i for i in ids if stem(i) == s]
        same = sum(set(A[i]["emotions"]) == set(B[i]["emotions"]) for i in sub)
        kk = [fmt(kappa([(A[i][t], B[i][t]) for i in sub])[4]) for t in FLAGS]
        print(f"  {s:<20}{len(sub):>4}{same:>5}   {kk[0]} / {kk[1]}")


if __name__ == "__main__":
    main()
