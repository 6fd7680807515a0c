"""Writes the golden values of the neural parity tests (numbers only for the official texts).

    python make_neural_goldens.py REFERENCES_DIR MODEL_DIR OUT_DIR

MODEL_DIR is m3e-small as `h2htalk models fetch` installs it. Pairs are drawn from the official
references as in make_lexical_goldens.py: the prediction for line i is the reference of line i+1
(wrapping around). Both texts are stripped; the `cut128` variants then cut both to their first
128 code points (the paper's rule), the `nocut` variants do not.

- `bert_score` (BERTScorer, idf=False, no baseline rescaling, batch 64, `num_layers` set) gives
  P, R, F1 at layers 4 (the last) and 2; m3e-small ships only tokenizer.json, so the fast
  tokenizer is used. A second run builds vocab.txt from tokenizer.json into a copy of the model
  without tokenizer.json and uses the slow `BertTokenizer`: it checks our WordPiece-from-vocab path.
- sentence-transformers (mean pooling over the attention mask, as it builds for m3e-small, which
  has no modules.json) gives the embeddings; the metric is their cosine, computed in float64.

OUT_DIR/neural_official.json: a sample of 30 pairs per sub-task (330) at both layers, with and
without the cut, and all 4,589 pairs at layer 4, with and without the cut.
OUT_DIR/neural_edge_cases.json: our own edge-case texts and their values.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

torch.set_num_threads(max(1, os.cpu_count() or 1))

import bert_score  # noqa: E402
import sentence_transformers  # noqa: E402
import transformers  # noqa: E402
from bert_score import BERTScorer  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

transformers.logging.set_verbosity_error()

STEMS = [
    "dialogue_base", "dialogue_emotion", "dialogue_schedule",
    "recollection_synthesize", "recollection_refine", "recollection_initialize",
    "itinerary_basic", "itinerary_middle", "itinerary_advanced", "itinerary_feedback", "itinerary_initialize",
]
LAYERS = [4, 2]
PER_TASK = 30
CUT = 128
DIGITS = 10


def read_texts(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["response"] for line in f if line.strip()]


def cut(text):
    return text[:CUT]


def r(x):
    return round(float(x), DIGITS)


class Scorers:
    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.bert = {}
        self.st = SentenceTransformer(model_dir, device="cpu")

    def bertscore(self, layer, cands, refs, model_dir=None, fast=True):
        key = (layer, model_dir or self.model_dir, fast)
        if key not in self.bert:
            self.bert[key] = BERTScorer(model_type=key[1], num_layers=layer, idf=False, rescale_with_baseline=False,
                                        batch_size=64, use_fast_tokenizer=fast, device="cpu")
        p, rr, f = self.bert[key].score(cands, refs, verbose=False, batch_size=64)
        return [[r(a), r(b), r(c)] for a, b, c in zip(p.tolist(), rr.tolist(), f.tolist())]

    def embedding(self, cands, refs):
        texts = sorted(set(cands) | set(refs))
        vecs = self.st.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)
        index = {t: v.astype(np.float64) for t, v in zip(texts, vecs)}
        out = []
        for c, rf in zip(cands, refs):
            a, b = index[c], index[rf]
            out.append(r(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))))
        return out


def pairs_of(refs, indices):
    n = len(refs)
    return [(refs[(i + 1) % n].strip(), refs[i].strip()) for i in indices]


def variants(scorers, pairs):
    cands = [p for p, _ in pairs]
    refs = [q for _, q in pairs]
    out = {}
    for layer in LAYERS:
        out[f"L{layer}_cut128"] = scorers.bertscore(layer, [cut(c) for c in cands], [cut(q) for q in refs])
        out[f"L{layer}_nocut"] = scorers.bertscore(layer, cands, refs)
    return out


def vocab_copy(model_dir, dest):
    """m3e-small without tokenizer.json, with vocab.txt written from it (ids in order)."""
    os.makedirs(dest)
    for name in ["config.json", "pytorch_model.bin", "tokenizer_config.json", "special_tokens_map.json"]:
        os.symlink(os.path.join(model_dir, name), os.path.join(dest, name))
    vocab = json.load(open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8"))["model"]["vocab"]
    with open(os.path.join(dest, "vocab.txt"), "w", encoding="utf-8") as f:
        for token, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
            f.write(token + "\n")
    return dest


def official(scorers, ref_dir, tmp):
    sample_idx, sample_pairs = {}, []
    full_pairs = {}
    for stem in STEMS:
        refs = read_texts(os.path.join(ref_dir, stem + ".jsonl"))
        n = len(refs)
        idx = sorted({round(k * (n - 1) / (PER_TASK - 1)) for k in range(PER_TASK)})
        sample_idx[stem] = idx
        sample_pairs += pairs_of(refs, idx)
        full_pairs[stem] = pairs_of(refs, range(n))
    assert all(p and q for p, q in sample_pairs)
    sample = {"indices": sample_idx, "bertscore": variants(scorers, sample_pairs)}
    sample["embedding"] = scorers.embedding([p for p, _ in sample_pairs], [q for _, q in sample_pairs])
    vocab_dir = vocab_copy(scorers.model_dir, os.path.join(tmp, "m3e-small-vocab"))
    sample["bertscore_vocab_txt"] = {
        "L4_cut128": scorers.bertscore(4, [cut(p) for p, _ in sample_pairs], [cut(q) for _, q in sample_pairs],
                                       model_dir=vocab_dir, fast=False)
    }

    all_pairs = [pq for stem in STEMS for pq in full_pairs[stem]]
    cands = [p for p, _ in all_pairs]
    refs = [q for _, q in all_pairs]
    flat = {
        "L4_cut128": scorers.bertscore(4, [cut(c) for c in cands], [cut(q) for q in refs]),
        "L4_nocut": scorers.bertscore(4, cands, refs),
    }
    emb = scorers.embedding(cands, refs)

    def split(values):
        out, k = {}, 0
        for stem in STEMS:
            out[stem] = values[k:k + len(full_pairs[stem])]
            k += len(full_pairs[stem])
        return out

    full = {"bertscore": {k: split(v) for k, v in flat.items()}, "embedding": split(emb)}
    return {"sample": sample, "full": full}


EDGE_CASES = [
    ("worked_example", "（轻轻握住你的手）别担心，我会一直陪着你。", "（轻轻握住你的手）告诉我发生了什么，我会一直在这里。"),
    ("identical", "（抬头微笑）雨停了，我们去老街走走吧。", "（抬头微笑）雨停了，我们去老街走走吧。"),
    ("ascii_mixed", "家里的Wi-Fi又断了，e-mail也发不出去，v2.0.1版本。", "Wi-Fi断了的话，先重启路由器。"),
    ("english_case", "I will ALWAYS be here for You, okay?", "I'm always here for you."),
    ("emoji_and_rare", "今天好开心😊🎉！\u9fef\u3400", "开心😊"),
    ("fullwidth_punct", "(微笑)好的,我知道了!你呢?", "（微笑）好的，我知道了！你呢？"),
    ("newlines", "06:30 晨跑\n08:00 早餐\n22:30 睡觉", "07:00 晨跑  \n08:30 吃早餐  \n22:00 入睡"),
    ("zero_width_only", "\u200b", "我在这里。"),
    ("one_char", "好", "好的，我在。"),
    ("long_cut", "我们一起去看老房子吧，" * 20, "今天下雨了，我在老城区的骑楼下躲雨，顺手画了一张速写。" * 8),
    ("long_over_512_tokens", "雨天的老建筑最好看，我想弹一首钢琴曲给你听。" * 40, "（轻轻握住你的手）别担心，我会一直陪着你。" * 30),
]


def edge_cases(scorers):
    pairs = [(p.strip(), q.strip()) for _, p, q in EDGE_CASES]
    values = variants(scorers, pairs)
    emb = scorers.embedding([p for p, _ in pairs], [q for _, q in pairs])
    cases = []
    for k, (name, p, q) in enumerate(EDGE_CASES):
        cases.append({
            "name": name, "prediction": p, "reference": q,
            "bertscore": {v: values[v][k] for v in values}, "embedding": emb[k],
        })
    return {"generator": "scripts/make_neural_goldens.py", "cases": cases}


def write(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    ref_dir, model_dir, out_dir = sys.argv[1:4]
    scorers = Scorers(model_dir)
    header = {
        "generator": "scripts/make_neural_goldens.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "bert_score": bert_score.__version__, "sentence_transformers": sentence_transformers.__version__},
        "model": "m3e-small", "offset": 1, "cut": CUT, "layers": LAYERS, "digits": DIGITS,
    }
    tmp = tempfile.mkdtemp()
    try:
        edge = edge_cases(scorers)
        write(os.path.join(out_dir, "neural_edge_cases.json"), {**header, **edge})
        write(os.path.join(out_dir, "neural_official.json"), {**header, **official(scorers, ref_dir, tmp)})
    finally:
        shutil.rmtree(tmp)
    print("wrote", out_dir)
