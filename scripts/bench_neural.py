"""The Python baselines of scripts/bench-neural.sh: BERTScore (bert_score 0.3.13, idf=False, no
rescaling, `num_layers` set) and embedding similarity (sentence-transformers, mean pooling,
cosine) of official pairs with m3e-small, as the paper profile computes them (BERTScore on both
texts cut to 128 code points, embeddings on the whole texts).

    python bench_neural.py REFERENCES_DIR PREDICTIONS_DIR MODEL_DIR batched|per-pair [LIMIT]

- batched: BERTScorer.score on all pairs with batch size 64, SentenceTransformer.encode of the
  predictions and of the references with batch size 64 (what a careful Python user does).
- per-pair: the official evaluator's pattern, one call per pair: BERTScorer.score([p], [r]) and
  SentenceTransformer.encode([p, r]).
Models load once; the time counted runs from before the models load to the last score.
Prints one JSON object: pairs, seconds, and the mean of each metric.
"""

import json
import os
import sys
import time

import numpy as np
import torch

torch.set_num_threads(max(1, os.cpu_count() or 1))

import transformers  # noqa: E402
from bert_score import BERTScorer  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

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
    pairs = pairs[:limit] if limit else pairs
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
    elif mode == "per-pair":
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
