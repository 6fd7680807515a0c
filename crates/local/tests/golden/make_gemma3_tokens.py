"""Golden token ids for crates/local's GGUF tokenizer: SentencePiece itself, on a model rebuilt from the
GGUF's own metadata (tokenizer.ggml.*), so no tokenizer file is fetched from anywhere.

    make-gemma3-tokens.sh            (builds the venv, then runs this)
    python make_gemma3_tokens.py MODEL.gguf OUT.json
"""
import json
import sys

import sentencepiece as spm
from gguf import GGUFReader
from sentencepiece import sentencepiece_model_pb2 as pb

TEXTS = [
    "Hello, world!",
    "I feel a bit lonely tonight. Could you talk with me for a while?",
    "你好，我今天有点难过。",
    "今天下午三点要开会，可是我好紧张，怎么办？",
    "我们周末去看海吧！记得带上相机📷和防晒霜。",
    "他说：“别担心，一切都会好起来的。”",
    "2025年7月3日 12:30，温度 28.5°C",
    "  two  spaces\tand a tab\n\nand   three",
    "line one\nline two\n\n\nline five",
    "<start_of_turn>user\nnot a special token<end_of_turn>",
    "<b>bold</b> and <table><tr><td>x</td></tr></table>",
    "Wi-Fi v2.0.1 e-mail@example.com 100% C++",
    "mixed 中英 text, 我爱 coffee ☕ and 钢琴🎹",
    "𠮷野家 and rare 龘 characters, ｆｕｌｌ－ｗｉｄｔｈ",
    "Ünïcödé naïve café — “quotes” … ellipsis",
    " leading space",
    "trailing space ",
    "😀😃😄",
    "",
]


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    out = []
    for i in f.data:
        part = f.parts[i]
        if f.types[-1] == 8:  # string
            out.append(bytes(part).decode("utf-8"))
        else:
            out.append(part.tolist()[0])
    return out


def main(gguf_path, out_path):
    r = GGUFReader(gguf_path)
    assert field(r, "tokenizer.ggml.model")[0] == "llama", "only SentencePiece GGUF tokenizers"
    tokens = field(r, "tokenizer.ggml.tokens")
    scores = field(r, "tokenizer.ggml.scores")
    types = field(r, "tokenizer.ggml.token_type")
    unk = field(r, "tokenizer.ggml.unknown_token_id")[0]
    m = pb.ModelProto()
    ts = m.trainer_spec
    ts.model_type = pb.TrainerSpec.BPE
    ts.vocab_size = len(tokens)
    ts.byte_fallback = True
    ts.unk_id = unk
    ts.bos_id = field(r, "tokenizer.ggml.bos_token_id", [-1])[0]
    ts.eos_id = field(r, "tokenizer.ggml.eos_token_id", [-1])[0]
    ts.pad_id = field(r, "tokenizer.ggml.padding_token_id", [-1])[0]
    ts.allow_whitespace_only_pieces = True
    ns = m.normalizer_spec
    ns.name = "identity"
    ns.add_dummy_prefix = bool(field(r, "tokenizer.ggml.add_space_prefix", [True])[0])
    ns.remove_extra_whitespaces = False
    ns.escape_whitespaces = True
    for i, (t, s, ty) in enumerate(zip(tokens, scores, types)):
        p = m.pieces.add()
        # llama.cpp stores user-defined pieces as plain text; SentencePiece writes spaces as U+2581.
        p.piece = t.replace(" ", "\u2581") if ty == 4 else t
        p.score = float(s)
        p.type = 2 if i == unk else int(ty)
    sp = spm.SentencePieceProcessor(model_proto=m.SerializeToString())
    cases = [{"text": t, "ids": sp.encode(t), "decoded": sp.decode(sp.encode(t))} for t in TEXTS]
    header = {"model": "gemma3-270m-q4_k_m.gguf", "tool": f"sentencepiece {spm.__version__}"}
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in header.items()) + ',\n "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n ]\n}\n")

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
