"""Style of references per sub-task: share opening with an action in parentheses, and the length
distribution (median, 10th and 90th percentile) in characters (whitespace not counted).
An action opening: after leading whitespace and quotes (" “ 「), the first character is ( or （.
Usage: python3 style.py official            -> the official references' style
       python3 style.py suite DIR            -> a suite's references (zh, scenarios/*.jsonl)
       python3 style.py compare DIR          -> both, and whether each sub-task is within bounds
                                               (share within 15 points, each of median/p10/p90 within 15%)"""
import json, glob, os, re, sys

REF = "/work/shared/h2htalk-data"

def opens_with_action(t):
    t = t.lstrip().lstrip('"“「').lstrip()
    return t[:1] in ("(", "（")

def length(t):
    return len(re.sub(r"\s", "", t))

def stats(texts):
    n = len(texts)
    share = sum(opens_with_action(t) for t in texts) / n
    L = sorted(length(t) for t in texts)
    def q(p):  # linear interpolation between order statistics (numpy's default)
        x = p * (len(L) - 1); i = int(x); f = x - i
        return float(L[i] + (L[min(i + 1, len(L) - 1)] - L[i]) * f)
    return dict(n=n, share=share, median=q(0.5), p10=q(0.1), p90=q(0.9))

def official():
    out = {}
    for f in sorted(glob.glob(f"{REF}/*.jsonl")):
        out[os.path.basename(f)[:-6]] = stats([json.loads(l)["response"] for l in open(f, encoding="utf-8")])
    return out

def suite(d):
    out = {}
    for f in sorted(glob.glob(f"{d}/scenarios/*.jsonl")):
        texts = [s["reference"] for s in map(json.loads, open(f, encoding="utf-8")) if s["lang"] == "zh"]
        if texts:
            out[os.path.basename(f)[:-6]] = stats(texts)
    return out

def show(name, s):
    print(f"{name:26} n={s['n']:5} action {s['share']*100:5.1f}%  median {s['median']:6.1f}  p10 {s['p10']:6.1f}  p90 {s['p90']:6.1f}")

if __name__ == "__main__":
    if sys.argv[1] == "official":
        for k, v in official().items(): show(k, v)
    elif sys.argv[1] == "suite":
        for k, v in suite(sys.argv[2]).items(): show(k, v)
    else:
        o, s = official(), suite(sys.argv[2]); bad = 0
        for k in o:
            if k not in s: continue
            a, b = o[k], s[k]
            ok_share = abs(a["share"] - b["share"]) <= 0.15
            ok_len = all(abs(b[q] - a[q]) <= 0.15 * a[q] for q in ("median", "p10", "p90"))
            bad += not (ok_share and ok_len)
            print(f"{k:26} share {b['share']*100:5.1f}% vs {a['share']*100:5.1f}% {'ok' if ok_share else 'OUT'} | "
                  f"median {b['median']:.0f}/{a['median']:.0f} p10 {b['p10']:.0f}/{a['p10']:.0f} p90 {b['p90']:.0f}/{a['p90']:.0f} {'ok' if ok_len else 'OUT'}")
        print(f"{bad} sub-task(s) out of bounds")
        sys.exit(1 if bad else 0)
