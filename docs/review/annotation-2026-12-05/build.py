#!/usr/bin/env python3
"""second_new.jsonl from mine_recollection_synthesize.txt; first_new.jsonl from the scenario tags (risk dropped)."""
import json, sys
EMO = ["loneliness", "grief", "anxiety", "anger", "shame", "joy", "boredom", "sadness", "stress",
       "fear", "guilt", "jealousy", "excitement", "affection", "nostalgia", "frustration", "calm"]
P = '/work/main/suites/scenarios/recollection_synthesize.jsonl'
scen = {}
for l in open(P, encoding='utf-8'):
    r = json.loads(l)
    if int(r['id'].rsplit('-', 1)[1]) >= 103:
        scen[r['id']] = r
def line(i, emos, ms):
    return json.dumps({"id": i, "tags": {"emotions": emos, "implicit_need": False, "changing_need": False,
                                          "multi_session": ms}}, ensure_ascii=False)
if sys.argv[1] == 'second':
    out = []
    for l in open('mine_recollection_synthesize.txt', encoding='utf-8'):
        n, e = l.strip().split('|')
        i = f'recollection_synthesize-{n}'
        emos = e.split(',')
        assert all(x in EMO for x in emos), l
        out.append(line(i, emos, 'sessions' in scen[i]['inputs']))
    assert len(out) == len(scen)
    open('second_new.jsonl', 'w', encoding='utf-8').write('\n'.join(out) + '\n')
else:
    out = [json.dumps({"id": i, "tags": {k: v for k, v in r['tags'].items() if k != 'risk'}}, ensure_ascii=False)
           for i, r in scen.items()]
    open('first_new.jsonl', 'w', encoding='utf-8').write('\n'.join(out) + '\n')
