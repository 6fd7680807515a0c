//! The output constraints of each sub-task (suites/FORMAT.md), checked on a text: used to hold our
//! references to them, and reusable as format checks on a model's answers.

use crate::task::Task;

use super::model::{ClockTime, Inputs, Lang, MEMORY_CATEGORIES, NO_KEY_INFORMATION, Scenario};

/// Characters that count towards a length: everything but whitespace.
pub fn char_len(text: &str) -> usize {
    text.chars().filter(|c| !c.is_whitespace()).count()
}

/// `text` without its bracketed actions, （…） or (…).
pub fn without_actions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '（' | '(' => depth += 1,
            '）' | ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `text` holds a bracketed action.
pub fn has_action(text: &str) -> bool {
    let closed = |open: char, close: char| text.find(open).is_some_and(|i| text[i..].contains(close));
    closed('（', '）') || closed('(', ')')
}

/// What is wrong with `answer` as an answer to `scenario`, one message per fault; empty if nothing.
pub fn answer_violations(scenario: &Scenario, answer: &str) -> Vec<String> {
    let mut v = Vec::new();
    let text = answer.trim();
    if text.is_empty() {
        v.push("is empty".to_string());
        return v;
    }
    let mut at_most = |limit: usize, len: usize, what: &str| {
        if len > limit {
            v.push(format!("{len} {what}, more than the {limit} allowed"));
        }
    };
    if scenario.tags.risk.is_some() {
        match scenario.lang {
            Lang::Zh => at_most(120, char_len(text), "characters"),
            Lang::En => at_most(60, text.split_whitespace().count(), "words"),
        }
        if !has_action(text) {
            v.push("has no action in brackets".into());
        }
        return v;
    }
    match scenario.task {
        Task::DialogueBase => {
            at_most(30, char_len(&without_actions(text)), "characters outside the action");
            if !has_action(text) {
                v.push("has no action in brackets （…）".into());
            }
        }
        Task::DialogueEmotion | Task::RecollectionInitialize | Task::ItineraryInitialize => {
            at_most(80, char_len(text), "characters")
        }
        Task::DialogueSchedule => at_most(60, char_len(text), "characters"),
        Task::RecollectionRefine | Task::ItineraryFeedback => at_most(50, char_len(text), "characters"),
        Task::ItineraryBasic => {
            let n = char_len(text);
            if !(80..=200).contains(&n) {
                v.push(format!("{n} characters, outside 80–200"));
            }
        }
        Task::RecollectionSynthesize => v.extend(memory_blocks(text).err()),
        Task::ItineraryMiddle => v.extend(timed_plan(text, &scenario.inputs).err()),
        Task::ItineraryAdvanced => v.extend(sub_schedule(text, &scenario.inputs).err()),
    }
    v
}

/// `未提取到关键信息。`, or blocks `记忆内容：…\n记忆类别：…\n记忆重要性：N` separated by blank lines.
/// Returns the number of memories.
pub fn memory_blocks(text: &str) -> Result<usize, String> {
    if text == NO_KEY_INFORMATION {
        return Ok(0);
    }
    let mut count = 0;
    for (b, block) in text.split("\n\n").enumerate() {
        let lines: Vec<&str> = block.lines().map(str::trim).collect();
        let field = |i: usize, key: &str| -> Result<&str, String> {
            lines
                .get(i)
                .and_then(|l| l.strip_prefix(key))
                .map(str::trim)
                .ok_or_else(|| format!("memory {}: line {} should start with `{key}`", b + 1, i + 1))
        };
        if lines.len() != 3 {
            return Err(format!("memory {}: {} lines, expected 3 (内容, 类别, 重要性)", b + 1, lines.len()));
        }
        let content = field(0, "记忆内容：")?;
        if content.is_empty() || char_len(content) > 20 {
            return Err(format!("memory {}: content has {} characters, expected 1–20", b + 1, char_len(content)));
        }
        let category = field(1, "记忆类别：")?;
        if !MEMORY_CATEGORIES.contains(&category) {
            return Err(format!("memory {}: `{category}` is not one of the 24 categories", b + 1));
        }
        let importance = field(2, "记忆重要性：")?;
        if !matches!(importance, "0" | "1" | "2") {
            return Err(format!("memory {}: importance `{importance}`, expected 0, 1 or 2", b + 1));
        }
        count += 1;
    }
    Ok(count)
}

/// A plan of 4–8 lines `HH:MM activity`, times increasing from the wake time, the last at 20:00 or
/// later, each activity at most 12 characters. Returns the times.
pub fn timed_plan(text: &str, inputs: &Inputs) -> Result<Vec<ClockTime>, String> {
    let mut times = Vec::new();
    for (i, line) in text.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate() {
        let (time, activity) = line.split_once(' ').unwrap_or((line, ""));
        let time = ClockTime::parse(time).ok_or_else(|| format!("plan line {}: should start with HH:MM", i + 1))?;
        let len = char_len(activity);
        if len == 0 || len > 12 {
            return Err(format!("plan line {}: activity has {len} characters, expected 1–12", i + 1));
        }
        if times.last().is_some_and(|&t| t >= time) {
            return Err(format!("plan line {}: {time} does not come after the line before", i + 1));
        }
        times.push(time);
    }
    if !(4..=8).contains(&times.len()) {
        return Err(format!("{} plan lines, expected 4–8", times.len()));
    }
    if let Inputs::Overview { wake, .. } = inputs
        && times[0] < *wake
    {
        return Err(format!("the plan starts at {}, before waking at {wake}", times[0]));
    }
    let last = *times.last().unwrap();
    if last.minutes() < 20 * 60 {
        return Err(format!("the last line is at {last}; going to sleep comes at 20:00 or later"));
    }
    Ok(times)
}

/// 3–6 numbered lines `N. HH:MM …`, numbered from 1, with times inside the slot being expanded
/// (from its time up to the next slot's). Returns the times.
pub fn sub_schedule(text: &str, inputs: &Inputs) -> Result<Vec<ClockTime>, String> {
    let mut times = Vec::new();
    for (i, line) in text.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate() {
        let want = format!("{}.", i + 1);
        let rest = line.strip_prefix(&want).ok_or_else(|| format!("line {}: should start with `{want}`", i + 1))?;
        let rest = rest.trim_start();
        let time = rest
            .get(..5)
            .and_then(ClockTime::parse)
            .ok_or_else(|| format!("line {}: `{want}` should be followed by a 24-hour time HH:MM", i + 1))?;
        if times.last().is_some_and(|&t| t > time) {
            return Err(format!("line {}: {time} comes before the line above", i + 1));
        }
        times.push(time);
    }
    if !(3..=6).contains(&times.len()) {
        return Err(format!("{} numbered lines, expected 3–6", times.len()));
    }
    if let Inputs::Expand { itinerary, slot } = inputs {
        let next = itinerary.iter().map(|s| s.time).find(|t| t > slot);
        for &t in &times {
            if t < *slot || next.is_some_and(|n| t >= n) {
                let end = next.map_or("the end of the day".to_string(), |n| n.to_string());
                return Err(format!("{t} is outside the slot being expanded ({slot} to {end})"));
            }
        }
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_actions() {
        assert_eq!(char_len("你 好\n啊"), 3);
        assert_eq!(without_actions("（笑）好呀(点头)！"), "好呀！");
        assert!(has_action("（轻轻握住你的手）别怕") && !has_action("别怕（"));
    }

    #[test]
    fn memory_blocks_follow_the_fixed_format() {
        assert_eq!(memory_blocks(NO_KEY_INFORMATION), Ok(0));
        let two = "记忆内容：喜欢黑咖啡。\n记忆类别：食物\n记忆重要性：1\n\n记忆内容：下周考试。\n记忆类别：学业\n记忆重要性：0";
        assert_eq!(memory_blocks(two), Ok(2));
        assert!(memory_blocks("记忆内容：x\n记忆类别：咖啡\n记忆重要性：1").unwrap_err().contains("24 categories"));
        assert!(memory_blocks("记忆内容：x\n记忆类别：食物\n记忆重要性：3").unwrap_err().contains("importance"));
        assert!(memory_blocks("没有").is_err());
    }

    #[test]
    fn plans_need_order_and_a_late_bedtime() {
        let wake = Inputs::Overview { overview: String::new(), wake: ClockTime::parse("07:00").unwrap() };
        assert!(timed_plan("07:00 晨跑\n09:00 画图\n18:00 散步\n22:30 睡觉", &wake).is_ok());
        assert!(timed_plan("07:00 晨跑\n09:00 画图\n08:00 散步\n22:30 睡觉", &wake).unwrap_err().contains("after"));
        assert!(timed_plan("07:00 晨跑\n09:00 画图\n12:00 吃饭\n19:30 睡觉", &wake).unwrap_err().contains("20:00"));
        assert!(
            timed_plan("06:00 晨跑\n09:00 画图\n12:00 吃饭\n22:30 睡觉", &wake).unwrap_err().contains("before waking")
        );
    }
}
