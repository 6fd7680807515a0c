import json, glob, os
SC = "/work/suite-staging/suites/scenarios"
def q(L,p):
    L=sorted(L); x=p*(len(L)-1); i=int(x); f=x-i; return L[i]+(L[min(i+1,len(L)-1)]-L[i])*f
print("| file | n | multi_session | changing_need | of which hidden | implicit_need | with sessions |")
print("|---|---|---|---|---|---|---|")
allh=[]; per={}
for f in sorted(glob.glob(f"{SC}/*.jsonl")):
    stem=os.path.basename(f)[:-6]; L=[json.loads(l) for l in open(f)]
    hp=f"hidden_{stem}.json"; hid=set(json.load(open(hp))) if os.path.exists(hp) else set()
    c=lambda k: sum(s['tags'][k] for s in L)
    hc=sum(1 for s in L if s['tags']['changing_need'] and s['id'] in hid)
    ses=sum('sessions' in s['inputs'] for s in L)
    print(f"| {stem} | {len(L)} | {c('multi_session')} | {c('changing_need')} | {hc} | {c('implicit_need')} | {ses} |")
    if stem.startswith('dialogue'):
        n=[len(s['inputs']['history'])+sum(len(x['history']) for x in s['inputs'].get('sessions',[])) for s in L]
        per[stem]=n; allh+=n
print()
print("| histories | min | Q1 | median | Q3 | max | share >= 8 |")
print("|---|---|---|---|---|---|---|")
for k,n in list(per.items())+[("all three",allh)]:
    print(f"| {k} | {min(n)} | {q(n,.25):g} | {q(n,.5):g} | {q(n,.75):g} | {max(n)} | {sum(x>=8 for x in n)}/{len(n)} = {sum(x>=8 for x in n)/len(n):.0%} |")
