#!/usr/bin/env python3
"""Prints the new recollection_synthesize items (103-146) without tags: inputs and reference."""
import json
P = '/work/main/suites/scenarios/recollection_synthesize.jsonl'
for l in open(P, encoding='utf-8'):
    r = json.loads(l)
    if int(r['id'].rsplit('-', 1)[1]) < 103:
        continue
    print('==', r['id'], r['persona'])
    for s in r['inputs'].get('sessions', []):
        print('  [session', s['date'] + ']')
        for t in s['history']:
            print('   ', t['role'][0], t['content'])
    for t in r['inputs']['history']:
        print('  ', t['role'][0], t['content'])
    print('   REF', r['reference'].replace('\n', ' | '))
