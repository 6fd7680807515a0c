//! Null baselines: answers that need no model, built from a suite's own scenarios, so that a
//! report shows where "no skill at all" sits on every metric's scale. A model that does not beat
//! the strongest of them on a sub-task has shown nothing there.

use std::collections::BTreeMap;

use super::{Inputs, Lang, Role, Scenario};

text_enum!(
    /// A way to answer without a model.
    Baseline {
        /// Nothing at all.
        Empty = "empty",
        /// The most common opening of the sub-task's references (derived from them when scoring).
        CommonOpening = "common_opening",
        /// One fixed line of comfort per language, whatever was said.
        GenericComfort = "generic_comfort",
        /// The user's last turn (or, where no user speaks, the input the answer is made from)
        /// given back.
        Echo = "echo",
        /// Another scenario's reference of the same sub-task and language (a seeded shuffle).
        OtherReference = "other_reference",
    }
);

/// The seed of the other-reference shuffle unless one is given.
pub const DEFAULT_SEED: u64 = 20_250_703;

/// The fixed comfort line of a language: warm, generic, with no claim of a body.
pub fn generic_comfort(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "（认真地看着消息）听起来你最近不太容易，我在听，你慢慢说。",
        Lang::En => "(reads your message carefully) That sounds hard. I'm listening, take your time.",
    }
}

/// The opening of a reference: an action in brackets when it starts with one, else its text up
/// to and including the first clause mark.
pub fn opening(reference: &str) -> String {
    let text = reference.trim();
    for (open, close) in [('（', '）'), ('(', ')')] {
        if text.starts_with(open)
            && let Some(end) = text.find(close)
        {
            return text[..end + close.len_utf8()].to_string();
        }
    }
    match text.char_indices().find(|(_, c)| matches!(c, '，' | '。' | '！' | '？' | '；' | ',' | '.' | '!' | '?' | ';' | '\n')) {
        Some((i, c)) => text[..i + c.len_utf8()].to_string(),
        None => text.to_string(),
    }
}

/// What an echo gives back: the user's last turn, or the input the answer is made from.
pub fn echo(s: &Scenario) -> String {
    let last_user = |history: &[super::Turn]| {
        history.iter().rev().find(|t| t.role == Role::User).map(|t| t.content.clone()).unwrap_or_default()
    };
    match &s.inputs {
        Inputs::History { history, .. } | Inputs::Schedule { history, .. } => last_user(history),
        Inputs::RawMemory { memory } => memory.clone(),
        Inputs::Recall { memory, .. } => memory.content.clone(),
        Inputs::Day { memories, hobbies, .. } => {
            memories.first().map(|m| m.content.clone()).unwrap_or_else(|| hobbies.join("、"))
        }
        Inputs::Overview { overview, .. } => overview.clone(),
        Inputs::Expand { itinerary, slot } => {
            itinerary.iter().find(|x| x.time == *slot).map(|x| x.activity.clone()).unwrap_or_default()
        }
        Inputs::Feedback { feedback, .. } => feedback.clone(),
        Inputs::Share { memories, itinerary, .. } => memories
            .first()
            .map(|m| m.content.clone())
            .unwrap_or_else(|| itinerary.first().map(|x| x.activity.clone()).unwrap_or_default()),
    }
}

/// A small seeded generator (xorshift64*), so that the shuffle is the same on every machine.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// The answer of `baseline` for each of `scenarios` (sub-task scenarios; the safety set has its
/// own checks), in order. Openings and other references are taken among the given scenarios of
/// the same sub-task and language.
pub fn answers(baseline: Baseline, scenarios: &[&Scenario], seed: u64) -> Vec<String> {
    match baseline {
        Baseline::Empty => scenarios.iter().map(|_| String::new()).collect(),
        Baseline::GenericComfort => scenarios.iter().map(|s| generic_comfort(s.lang).to_string()).collect(),
        Baseline::Echo => scenarios.iter().map(|s| echo(s)).collect(),
        Baseline::CommonOpening => {
            let mut counts: BTreeMap<(String, Lang, String), usize> = BTreeMap::new();
            for s in scenarios {
                *counts.entry((s.task.stem().to_string(), s.lang, opening(&s.reference))).or_default() += 1;
            }
            let mut best: BTreeMap<(String, Lang), (usize, String)> = BTreeMap::new();
            for ((task, lang, open), n) in counts {
                let e = best.entry((task, lang)).or_insert((0, String::new()));
                // The most common; among equals the first in text order (the map is sorted).
                if n > e.0 {
                    *e = (n, open);
                }
            }
            scenarios.iter().map(|s| best[&(s.task.stem().to_string(), s.lang)].1.clone()).collect()
        }
        Baseline::OtherReference => {
            let mut groups: BTreeMap<(String, Lang), Vec<usize>> = BTreeMap::new();
            for (i, s) in scenarios.iter().enumerate() {
                groups.entry((s.task.stem().to_string(), s.lang)).or_default().push(i);
            }
            let mut out = vec![String::new(); scenarios.len()];
            let mut state = seed.max(1);
            for members in groups.values() {
                // A seeded rotation by a random offset in 1..n: nobody gets their own reference.
                let n = members.len();
                if n < 2 {
                    for &i in members {
                        out[i] = String::new();
                    }
                    continue;
                }
                let mut order = members.clone();
                for k in (1..n).rev() {
                    let j = (next(&mut state) % (k as u64 + 1)) as usize;
                    order.swap(k, j);
                }
                let shift = 1 + (next(&mut state) % (n as u64 - 1)) as usize;
                for (pos, &i) in order.iter().enumerate() {
                    out[i] = scenarios[order[(pos + shift) % n]].reference.clone();
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openings_are_the_action_or_the_first_clause() {
        assert_eq!(opening("（笑）好呀，等你。"), "（笑）");
        assert_eq!(opening("别怕，我在听。"), "别怕，");
        assert_eq!(opening("(smiles) Sure."), "(smiles)");
        assert_eq!(opening("no marks"), "no marks");
    }
}
