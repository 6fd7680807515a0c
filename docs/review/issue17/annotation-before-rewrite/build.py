"""Build first.jsonl (existing tags, from the snapshot) and second.jsonl (from second_raw.txt), in suite order."""
import json
ORDER=["dialogue_base","dialogue_emotion","dialogue_schedule","recollection_synthesize","recollection_refine","recollection_initialize","itinerary_basic","itinerary_middle","itinerary_advanced","itinerary_feedback","itinerary_initialize"]
EMO={"loneliness","grief","anxiety","anger","shame","joy","boredom","sadness","stress","fear","guilt","jealousy","excitement","affection","nostalgia","frustration","calm"}
import sys
src=sys.argv[1] if len(sys.argv)>1 else "snapshot"
ids=[];first=[]
for st in ORDER:
    for line in open(f"{src}/{st}.jsonl"):
        s=json.loads(line); t=s["tags"]
        ids.append(s["id"])
        first.append({"id":s["id"],"tags":{"emotions":t["emotions"],"implicit_need":t["implicit_need"],"changing_need":t["changing_need"],"multi_session":t["multi_session"]}})
raw={}
for line in open("second_raw.txt"):
    i,e,a,b,c=line.split()
    em=e.split(","); assert set(em)<=EMO,(i,em)
    raw[i]={"emotions":em,"implicit_need":a=="1","changing_need":b=="1","multi_session":c=="1"}
assert set(raw)==set(ids) and len(ids)==462
with open("second.jsonl","w") as f:
    for i in ids: f.write(json.dumps({"id":i,"tags":raw[i]},ensure_ascii=False)+"\n")
if src=="snapshot":
    with open("first.jsonl","w") as f:
        for r in first: f.write(json.dumps(r,ensure_ascii=False)+"\n")
print("ok",len(ids))
