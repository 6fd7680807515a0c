import json,sys,statistics
def q(L,p):
    L=sorted(L); x=p*(len(L)-1); i=int(x); f=x-i; return L[i]+(L[min(i+1,len(L)-1)]-L[i])*f
for stem in sys.argv[1:]:
    n=[]
    for s in map(json.loads,open(f'/work/suite-staging/suites/scenarios/{stem}.jsonl')):
        I=s['inputs']; n.append(len(I['history'])+sum(len(x['history']) for x in I.get('sessions',[])))
    print(stem,'min',min(n),'q1',q(n,.25),'med',q(n,.5),'q3',q(n,.75),'max',max(n),'>=8',sum(x>=8 for x in n),f'{sum(x>=8 for x in n)/len(n):.0%}')
