import sys
def rep_block(path, num, new):
    t=open(path).read()
    a=t.index(f'# {num} '); b=t.find('\n# ',a+1); b=len(t) if b<0 else b+1
    t=t[:a]+new.strip()+'\n\n'+t[b:]
    open(path,'w').write(t)
def sub(path, pairs):
    t=open(path).read()
    for a,b in pairs:
        assert t.count(a)==1,(a,t.count(a)); t=t.replace(a,b)
    open(path,'w').write(t)
