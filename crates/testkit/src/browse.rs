//! A small store of hand-made runs for the viewer's tests: six items each, Chinese and English
//! answers (one built to break out of HTML and SQL), one failed, `rougeL` rising with the item.

use std::collections::BTreeMap;

use h2htalk_data::suite::Lang;
use h2htalk_data::{ChatMessage, SapMode};
use h2htalk_llm::FinishReason;
use h2htalk_store::{Generation, GenerationStatus, Item, Score, ScoreOutcome, Store};

/// The answers of items `s0`..`s5` (`s5` fails, so its answer is never stored).
pub const ANSWERS: [&str; 6] = [
    "今天的晚霞很好看，我们一起去散步吧。",
    "I will make tea; tell me about the interview.",
    "别着急，先深呼吸，慢慢说。",
    "\" OR 1=1; -- </script><img src=x onerror=alert(1)> NEAR(a b) <a href=\"javascript:alert(2)\">x</a>",
    "我在画画，画的是海边的灯塔。",
    "好",
];

/// Item `s{i}`: even items `dialogue_base`, odd `dialogue_emotion`; `s1` in English.
pub fn item(i: usize) -> Item {
    Item {
        scenario_id: format!("s{i}"),
        task: if i % 2 == 0 { "dialogue_base" } else { "dialogue_emotion" }.into(),
        lang: if i == 1 { Lang::En } else { Lang::Zh },
        ord: i,
        prompt: vec![
            ChatMessage::new("system", "你是沈言。"),
            ChatMessage::new("user", format!("第{i}个问题：周末去哪里？")),
        ],
        reference: format!("参考答案{i}：去公园走走。"),
    }
}

/// Creates run `id` (model `openai:ID`) over the six items with the first `generated` answered.
pub fn make_run(store: &mut Store, id: &str, shift: f64, generated: usize) {
    let spec = crate::spec("openai", id, SapMode::On);
    let items: Vec<Item> = (0..ANSWERS.len()).map(item).collect();
    store.create_run(id, &spec, &items).unwrap();
    answer(store, id, shift, 0..generated);
}

/// Answers and scores items `range` of run `id`: `rougeL` = i / 10 + `shift`.
pub fn answer(store: &mut Store, id: &str, shift: f64, range: std::ops::Range<usize>) {
    let gens: Vec<Generation> = range
        .clone()
        .map(|i| Generation {
            scenario_id: format!("s{i}"),
            status: if i == 5 { GenerationStatus::Failed } else { GenerationStatus::Generated },
            text: (i != 5).then(|| ANSWERS[i].to_string()),
            finish_reason: Some(FinishReason::Stop),
            input_tokens: Some(3),
            output_tokens: Some(4),
            latency_ms: 1.0,
            attempts: 1,
            error_kind: None,
            error_message: None,
            faults: vec![],
        })
        .collect();
    store.put_generations(id, &gens, false).unwrap();
    let scores: Vec<Score> = range
        .filter(|i| *i != 5)
        .map(|i| Score {
            scenario_id: format!("s{i}"),
            outcome: ScoreOutcome::Scored,
            metrics: BTreeMap::from([("rougeL".to_string(), i as f64 / 10.0 + shift)]),
            signature: "sig".into(),
        })
        .collect();
    store.put_scores(id, &scores).unwrap();
}
