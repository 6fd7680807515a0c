"""Writes the golden values of the lexical parity tests (numbers only for the official texts).

    python make_lexical_goldens.py REFERENCES_DIR OUT_DIR

- OUT_DIR/lexical_official.json: for every official reference file, the token count and a 48-bit
  token hash of each (stripped) reference, and the seven metrics of two pairings: the prediction
  for line i is the reference of line i+1 (offset 1), resp. i+7 (offset 7), wrapping around. No
  text of the official release is written.
- OUT_DIR/lexical_edge_cases.json: our own edge-case texts with their tokens and metrics.
"""

import hashlib
import json
import os
import random
import sys

import jieba
import nltk

from official_lexical import NAMES, STEMS, read_texts, score, tokens

OFFSETS = [1, 7]


def token_hash(toks):
    return int(hashlib.sha256("\x1f".join(toks).encode("utf-8")).hexdigest()[:12], 16)


def official(ref_dir):
    out = {
        "generator": "scripts/make_lexical_goldens.py",
        "jieba": jieba.__version__,
        "nltk": nltk.__version__,
        "metrics": NAMES,
        "offsets": OFFSETS,
        "tasks": {},
    }
    for stem in STEMS:
        refs = read_texts(os.path.join(ref_dir, stem + ".jsonl"))
        n = len(refs)
        toks = [tokens(r.strip()) for r in refs]
        entry = {
            "count": n,
            "token_counts": [len(t) for t in toks],
            "token_hashes": [token_hash(t) for t in toks],
        }
        for off in OFFSETS:
            entry[f"offset_{off}"] = [score(refs[(i + off) % n], refs[i]) for i in range(n)]
        out["tasks"][stem] = entry
    return out


def long_text(seed, n):
    rng = random.Random(seed)
    pieces = [
        "今天下雨了，我在老城区的骑楼下躲雨，顺手画了一张速写。", "Wi-Fi密码是abc_123-x.y，记得改。",
        "他说：“别怕，我在。”", "2024-05-01 那天我们去了3.5公里外的湖边。", "（轻轻握住你的手）",
        "咖啡、钢琴、雨天、旧建筑……", "Email: shen.yan@example.com +86 138-0000-0000", "  \n\n  ",
        "㐀㐁龦龧", "我们一起去吃火锅吧！", "C++和c#哪个更难？", "穿着T恤去做B超。", "100%的把握",
    ]
    common = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质"
    text = []
    while sum(map(len, text)) < n:
        text.append(rng.choice(pieces) if rng.random() < 0.3 else "".join(rng.choice(common) for _ in range(rng.randint(2, 12))))
    return "".join(text)[:n]


EDGE_CASES = [
    ("worked_example", "（轻轻握住你的手）别担心，我会一直陪着你。", "（轻轻握住你的手）告诉我发生了什么，我会一直在这里。"),
    ("ascii_hyphen", "家里的Wi-Fi又断了，e-mail也发不出去。", "Wi-Fi断了的话，先重启路由器。"),
    ("ascii_date", "我们2024-05-01见面，10:30在门口。", "2024-05-01上午10:30，老地方见。"),
    ("ascii_version", "升级到v2.0.1之后好多了，3.5.2版也行。", "v2.0版本挺稳定的，别升到v2.0.1。"),
    ("ascii_underscore", "文件名叫my_plan_v3.docx，放在__init__旁边。", "把my_plan_v3改成final_plan。"),
    ("ascii_at_percent_plus", "发到shen.yan@example.com，成功率100%，电话+86 138-0000-0000。", "邮件shen.yan@example.com收到了，100%确定。"),
    ("ascii_misc", "C++和c#都学过，T恤50%off，A&B合作，#话题#。", "c++太难了，C#还行，买了件T恤。"),
    ("dictionary_total", "医生建议我去做B超，顺便看看AA制的账单。", "做B超前不要吃东西。"),
    ("fullwidth_vs_ascii_punct", "(微笑)好的,我知道了!你呢?", "（微笑）好的，我知道了！你呢？"),
    ("newlines_and_spaces", "第一行\n第二行\r\n第三行   多个空格\t制表符", "第一行\n\n第二行  空格"),
    ("ideographic_space", "你好\u3000世界", "你好 世界"),
    ("cjk_outside_python_class", "这个字\u9fef和\u3400\u3401很少见，还有\U00020000。", "\u9fef\u9fef是生僻字。"),
    ("emoji", "今天好开心😊🎉！", "开心😊"),
    ("english_sentence", "I will always be here for you, okay?", "I'm always here for you."),
    ("one_token", "好", "好"),
    ("one_token_vs_sentence", "嗯", "嗯，我在听。"),
    ("identical", "（抬头微笑）雨停了，我们去老街走走吧。", "（抬头微笑）雨停了，我们去老街走走吧。"),
    ("disjoint", "晴天", "下雨"),
    ("repeated_tokens", "好好好好好好好好", "好的好的"),
    ("surrounding_whitespace", "  \n 我在这里。\u3000\x1f", "我在这里。"),
    ("empty_prediction", "   \n", "我在这里。"),
    ("empty_reference", "我在这里。", ""),
    ("both_empty", "", " "),
    ("numbers_and_decimals", "体温37.5度，血压120/80，吃了0.5片。", "37.5度有点低烧，多喝水。"),
    ("memory_format", "记忆内容：喜欢黑咖啡。\n记忆类别：食物\n记忆重要性：1", "记忆内容：喜欢喝黑咖啡。\n记忆类别：食物\n记忆重要性：2"),
    ("plan_format", "06:30 晨跑\n08:00 早餐\n22:30 睡觉", "07:00 晨跑  \n08:30 吃早餐  \n22:00 入睡"),
    ("long_5000", long_text(1, 5000), long_text(2, 5000)),
    ("long_vs_short", long_text(3, 5000), "雨天的老建筑最好看。"),
]


def edge_cases():
    out = []
    for name, pred, ref in EDGE_CASES:
        out.append({
            "name": name,
            "prediction": pred,
            "reference": ref,
            "prediction_tokens": tokens(pred.strip()),
            "reference_tokens": tokens(ref.strip()),
            "scores": score(pred, ref),
        })
    return {"generator": "scripts/make_lexical_goldens.py", "metrics": NAMES, "cases": out}


def write(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    ref_dir, out_dir = sys.argv[1], sys.argv[2]
    write(os.path.join(out_dir, "lexical_official.json"), official(ref_dir))
    write(os.path.join(out_dir, "lexical_edge_cases.json"), edge_cases())
    print("wrote", out_dir)
