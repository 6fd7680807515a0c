#!/usr/bin/env python3
"""resolved_new.jsonl and the rows for disagreements.md from first_new.jsonl, second_new.jsonl and
resolve_emotions.txt (id suffix|label|resolved value|reason). Checks: every disagreement has exactly one
decision with a reason, no decision without a disagreement, every resolved set lies between the
intersection and the union of the two annotations, the flags agree and respect FORMAT.md's table."""
import json
EMO = ["loneliness", "grief", "anxiety", "anger", "shame", "joy", "boredom", "sadness", "stress",
       "fear", "guilt", "jealousy", "excitement", "affection", "nostalgia", "frustration", "calm"]
load = lambda p: [json.loads(l) for l in open(p, encoding='utf-8')]
A, B = load('first_new.jsonl'), load('second_new.jsonl')
assert [a['id'] for a in A] == [b['id'] for b in B]
dec = {}
for l in open('resolve_emotions.txt', encoding='utf-8'):
    n, lab, v, why = l.rstrip('\n').split('|', 3)
    key = (f'recollection_synthesize-{n}', lab)
    assert key not in dec and lab in EMO and v in ('true', 'false') and why.strip(), l
    dec[key] = (v == 'true', why)
rows, out, used, changed = [], [], set(), 0
tally = {'first': 0, 'second': 0}
for a, b in zip(A, B):
    i, ta, tb = a['id'], a['tags'], b['tags']
    for f in ('implicit_need', 'changing_need', 'multi_session'):
        assert ta[f] == tb[f], (i, f)
    assert not ta['implicit_need'] and not ta['changing_need']
    ea, eb = set(ta['emotions']), set(tb['emotions'])
    res = [e for e in ta['emotions']]
    for e in EMO:
        if (e in ea) == (e in eb):
            continue
        v, why = dec[(i, e)]
        used.add((i, e))
        if v and e not in res:
            res.append(e)
        if not v and e in res:
            res.remove(e)
        tally['first' if v == (e in ea) else 'second'] += 1
        rows.append(f"| {i} | emotion:{e} | {str(e in ea).lower()} | {str(e in eb).lower()} | {str(v).lower()} | {why} |")
    assert ea & eb <= set(res) <= ea | eb and res, i
    changed += set(res) != ea
    out.append(json.dumps({"id": i, "tags": {"emotions": res, "implicit_need": ta['implicit_need'],
                                              "changing_need": ta['changing_need'],
                                              "multi_session": ta['multi_session']}}, ensure_ascii=False))
assert used == set(dec), set(dec) - used
open('resolved_new.jsonl', 'w', encoding='utf-8').write('\n'.join(out) + '\n')
open('rows_new.md', 'w', encoding='utf-8').write('\n'.join(rows) + '\n')
print(len(rows), 'disagreements;', tally, '; scenarios whose tags change:', changed)
