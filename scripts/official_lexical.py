"""The official H2HTalk lexical scoring, restated for parity tests and benchmarks.

It does what the official evaluator does for one (prediction, reference) pair, in our own words:
both texts are stripped; a pair with an empty side is dropped; tokens come from
`jieba.cut` (precise mode, HMM on); BLEU-1..4 from nltk `sentence_bleu` with one reference,
`SmoothingFunction().method1` and the weights (1,0,0,0), (.5,.5,0,0), (.33,.33,.34,0),
(.25,.25,.25,.25); ROUGE-1/2 as F1 of clipped n-gram overlap (0 if a side has fewer than n tokens)
and ROUGE-L as F1 of the LCS. Like the evaluator, each metric family tokenizes the texts itself.

Used as a program it scores a reference directory against a prediction directory (both in the
official layout, matched by line number) and prints the mean of each metric:

    python official_lexical.py REFERENCES_DIR PREDICTIONS_DIR
"""

import json
import os
import sys

import jieba
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

jieba.setLogLevel(60)
STEMS = [
    "dialogue_base", "dialogue_emotion", "dialogue_schedule",
    "recollection_synthesize", "recollection_refine", "recollection_initialize",
    "itinerary_basic", "itinerary_middle", "itinerary_advanced", "itinerary_feedback", "itinerary_initialize",
]
NAMES = ["rouge1", "rouge2", "rougeL", "bleu1", "bleu2", "bleu3", "bleu4"]
WEIGHTS = [(1, 0, 0, 0), (0.5, 0.5, 0, 0), (0.33, 0.33, 0.34, 0), (0.25, 0.25, 0.25, 0.25)]
SMOOTH = SmoothingFunction().method1


def tokens(text):
    return list(jieba.cut(text))


def bleu_scores(hypothesis, reference):
    hyp = tokens(hypothesis)
    refs = [tokens(reference)]
    return [sentence_bleu(refs, hyp, weights=w, smoothing_function=SMOOTH) for w in WEIGHTS]


def _ngram_counts(toks, n):
    counts = {}
    for i in range(len(toks) - n + 1):
        g = tuple(toks[i:i + n])
        counts[g] = counts.get(g, 0) + 1
    return counts


def _f1(overlap, hyp_total, ref_total):
    recall = 0.0 if ref_total == 0 else overlap / ref_total
    precision = 0.0 if hyp_total == 0 else overlap / hyp_total
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def rouge_n(hyp, ref, n):
    if len(hyp) < n or len(ref) < n:
        return 0.0
    h, r = _ngram_counts(hyp, n), _ngram_counts(ref, n)
    overlap = sum(min(c, r.get(g, 0)) for g, c in h.items())
    return _f1(overlap, sum(h.values()), sum(r.values()))


def rouge_l(hyp, ref):
    m, n = len(hyp), len(ref)
    if m == 0 or n == 0:
        return 0.0
    prev = [0] * (n + 1)
    for i in range(1, m + 1):
        cur = [0] * (n + 1)
        for j in range(1, n + 1):
            cur[j] = prev[j - 1] + 1 if hyp[i - 1] == ref[j - 1] else max(prev[j], cur[j - 1])
        prev = cur
    return _f1(prev[n], m, n)


def rouge_scores(hypothesis, reference):
    hyp, ref = tokens(hypothesis), tokens(reference)
    return [rouge_n(hyp, ref, 1), rouge_n(hyp, ref, 2), rouge_l(hyp, ref)]


def score(prediction, reference):
    """The seven metrics in NAMES order, or None when the pair is dropped."""
    p, r = prediction.strip(), reference.strip()
    if not p or not r:
        return None
    return rouge_scores(p, r) + bleu_scores(p, r)


def read_texts(path):
    with open(path, encoding="utf-8-sig") as f:
        return [json.loads(line)["response"] for line in f if line.strip()]


def main(ref_dir, pred_dir):
    totals, scored, dropped = [0.0] * len(NAMES), 0, 0
    for stem in STEMS:
        refs = read_texts(os.path.join(ref_dir, stem + ".jsonl"))
        preds = read_texts(os.path.join(pred_dir, stem + ".jsonl"))
        assert len(refs) == len(preds), stem
        for p, r in zip(preds, refs):
            s = score(p, r)
            if s is None:
                dropped += 1
                continue
            scored += 1
            totals = [t + v for t, v in zip(totals, s)]
    print(json.dumps({"scored": scored, "dropped": dropped, **{n: t / scored for n, t in zip(NAMES, totals)}}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
