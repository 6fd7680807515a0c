p='/work/main/crates/data/src/suite/constraints.rs'
s=open(p).read()
s=s.replace('Task::DialogueSchedule => v.push(("length", at_most(60, char_len(text), "characters"))),','Task::DialogueSchedule => v.push(("length", at_most(80, char_len(text), "characters"))),')
s=s.replace("""/// A plan of 4–8 lines `HH:MM activity`, times increasing from the wake time, the last at 20:00 or
/// later, each activity at most 12 characters. Returns the times.
pub fn timed_plan(text: &str, inputs: &Inputs) -> Result<Vec<ClockTime>, String> {
    let mut times = Vec::new();
    for (i, line) in text.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate() {""","""/// A plan of 4–8 lines `HH:MM activity`, times increasing from the wake time, the last at 20:00 or
/// later, each activity at most 12 characters; it may be followed by a blank line and one note in
/// parentheses (as many official references end). Returns the times.
pub fn timed_plan(text: &str, inputs: &Inputs) -> Result<Vec<ClockTime>, String> {
    let text = text.trim();
    let (plan, note) = match text.split_once("\\n\\n") {
        Some((plan, note)) => (plan, Some(note.trim())),
        None => (text, None),
    };
    if let Some(note) = note {
        let bracketed = (note.starts_with('（') && note.ends_with('）')) || (note.starts_with('(') && note.ends_with(')'));
        if !bracketed || note.contains("\\n\\n") {
            return Err("after the plan and a blank line only one note in parentheses （…） may follow".into());
        }
    }
    let mut times = Vec::new();
    for (i, line) in plan.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate() {""")
open(p,'w').write(s)
