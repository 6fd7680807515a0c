"""Give-away measures between a reference and the text of a scenario's inputs.

rougel_recall: ROUGE-L recall of the reference's jieba tokens (punctuation and whitespace dropped) by
  the tokens of all input strings joined (LCS over the whole sequences).
lcs_chars: the longest common substring, in characters (whitespace removed), of reference and any input string.
"""
import json, re, sys, unicodedata
import jieba
jieba.setLogLevel(60)

def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            if k in ("role",):
                continue
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)

def is_word(t):
    return any(unicodedata.category(c)[0] in "LN" for c in t)

def toks(s):
    return [t for t in jieba.lcut(s) if t.strip() and is_word(t)]

def lcs_len(a, b):
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]

def longest_common_substring(a, b):
    best = 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                cur[j + 1] = prev[j] + 1
                if cur[j + 1] > best:
                    best = cur[j + 1]
        prev = cur
    return best

def squash(s):
    return re.sub(r"\s+", "", s)

def measures(reference, inputs):
    ins = list(strings(inputs))
    rt = toks(reference)
    it = toks("\n".join(ins))
    rec = lcs_len(rt, it) / len(rt) if rt else 0.0
    r = squash(reference)
    lcsub = max((longest_common_substring(r, squash(s)) for s in ins), default=0)
    return rec, lcsub
