"""The Python baselines of scripts/bench-neural.sh: BERTScore (bert_score 0.3.13, idf=False, no
rescaling, `num_layers` set) and embedding similarity (sentence-transformers, mean pooling,
cosine) of official pairs with m3e-small, as the paper profile computes them (BERTScore on both
texts cut to 128 code points, embeddings on the whole texts).

    python bench_neural.py REFERENCES_DIR PREDICTIONS_DIR MODEL_DIR MODE [LIMIT]

- batched: BERTScorer.score on all pairs with batch size 64, SentenceTransformer.encode of the
  predictions and of the references with batch size 64 (what a careful Python user does).
- official: what the official evaluator (H2HTalk's evaluate/bertscore.py and embedding.py, commit
  4730dae) does for each pair. Its model caches do not take effect: bert_score 0.3.13's `score()`
  builds its tokenizer and model on every call (nothing reads the `bert_score._models` entry the
  evaluator sets), and the embedding module's model dictionary is created inside the function.
  So per pair: one `bert_score.score([p], [r])` call and a garbage collection, then a new
  SentenceTransformer, one `encode` call for each text and their cosine. The one deviation: the
  fast tokenizer (m3e-small ships tokenizer.json without vocab.txt; the ids are the same).
- per-pair-held: the same one-call-per-pair pattern with both models built once and held
  (BERTScorer.score([p], [r]) and SentenceTransformer.encode([p, r])): what the official evaluator
  would cost if its caches worked.
Models load once before the pairs in every mode (`official` then rebuilds them per pair as the
evaluator does); the time counted runs from before that first load to the last score. LIMIT
scores an evenly spaced sample of that many pairs. Prints one JSON object: pairs, seconds, and
the mean of each metric.
"""

import gc
import json
import os
import sys
import time

import numpy as np
import torch

torch.set_num_threads(max(1, os.cpu_count() or 1))

import transformers  # noqa: E402
import bert_score  # noqa: E402
from bert_score import BERTScorer  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers import util as st_util  # noqa: E402

transformers.logging.set_verbosity_error()
STEMS = [
    "dialogue_base", "dialogue_emotion", "dialogue_schedule",
    "recollection_synthesize", "recollection_refine", "recollection_initialize",
    "itinerary_basic", "itinerary_middle", "itinerary_advanced", "itinerary_feedback", "itinerary_initialize",
]


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["response"] for line in f if line.strip()]


def cosine(a, b):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    ref_dir, pred_dir, model, mode = sys.argv[1:5]
    limit = int(sys.argv[5]) if len(sys.argv) > 5 else None
    pairs = []
    for stem in STEMS:
        refs = read(os.path.join(ref_dir, stem + ".jsonl"))
        preds = read(os.path.join(pred_dir, stem + ".jsonl"))
        pairs += [(p.strip(), r.strip()) for p, r in zip(preds, refs) if p.strip() and r.strip()]
    pairs = pairs[::int(os.environ.get("STRIDE", "1"))]
    if limit and limit < len(pairs):
        pairs = [pairs[i * len(pairs) // limit] for i in range(limit)]
    cands = [p for p, _ in pairs]
    refs = [r for _, r in pairs]

    start = time.perf_counter()
    scorer = BERTScorer(model_type=model, num_layers=4, idf=False, rescale_with_baseline=False,
                        batch_size=64, use_fast_tokenizer=True, device="cpu")
    st = SentenceTransformer(model, device="cpu")
    if mode == "batched":
        _, _, f = scorer.score([c[:128] for c in cands], [r[:128] for r in refs], batch_size=64)
        f1 = f.tolist()
        ec = st.encode(cands, batch_size=64, convert_to_numpy=True, show_progress_bar=False)
        er = st.encode(refs, batch_size=64, convert_to_numpy=True, show_progress_bar=False)
        emb = [cosine(a, b) for a, b in zip(ec, er)]
    elif mode == "official":
        f1, emb = [], []
        for c, r in pairs:
            # The evaluator cuts both texts when either is longer than 128: the same as cutting each.
            with torch.no_grad():
                _, _, f = bert_score.score([c[:128]], [r[:128]], model_type=model, num_layers=4, lang="zh",
                                           verbose=False, device="cpu", rescale_with_baseline=False,
                                           use_fast_tokenizer=True)
            f1.append(f.item())
            gc.collect()
            fresh = SentenceTransformer(model, device="cpu")
            ec = fresh.encode(c, convert_to_tensor=True)
            er = fresh.encode(r, convert_to_tensor=True)
            emb.append(st_util.pytorch_cos_sim(ec, er).item())
    elif mode == "per-pair-held":
        f1, emb = [], []
        for c, r in pairs:
            _, _, f = scorer.score([c[:128]], [r[:128]])
            f1.append(float(f[0]))
            e = st.encode([c, r], convert_to_numpy=True, show_progress_bar=False)
            emb.append(cosine(e[0], e[1]))
    else:
        sys.exit(f"unknown mode {mode}")
    seconds = time.perf_counter() - start
    print(json.dumps({"pairs": len(pairs), "seconds": seconds,
                      "bertscore": sum(f1) / len(f1), "embedding": sum(emb) / len(emb)}))


if __name__ == "__main__":
    main()
