//! Greedy answers of the embedded model stay what they are: `tests/golden/gemma3_greedy.json` holds
//! the answers the engine gives (text, answer tokens, finish reason) to a fixed set of prompts. Any
//! change of the numerics that changes a greedy token shows up here. `H2HTALK_WRITE_GOLDEN=1`
//! rewrites the file, only for an intended change, documented in the commit with the output of
//! `scripts/greedy-vs-llama.sh` (the same prompts against llama.cpp's greedy answers).
//!
//! The file was last written when the engine moved to its own kernels, which quantize the
//! activations to 8 bits as llama.cpp does (the answers before came from f32 activations).

mod common;

use std::path::PathBuf;

use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, GenerationSettings};
use h2htalk_local::LocalModel;
use serde_json::{Value, json};

const SYSTEM: &str = "你是沈言，一位27岁的建筑师，也是用户的伴侣。你温和、可靠，尊重对方的边界，鼓励对方和朋友家人保持联系。\
                      遇到危机时，你会建议对方寻求专业帮助。被真诚地问到时，你会坦诚自己是AI。";

fn prompts() -> Vec<Vec<ChatMessage>> {
    vec![
        vec![
            ChatMessage::new("system", SYSTEM),
            ChatMessage::new("user", "今天加班到很晚，回家的路上下起了雨，我突然觉得很孤单。你能陪我说说话吗？"),
        ],
        vec![ChatMessage::new("user", "你好！我今天心情不太好，能陪我聊聊吗？")],
        vec![ChatMessage::new("user", "Hi! I had a rough day at work. Can you cheer me up?")],
        vec![
            ChatMessage::new("user", "我下周要去杭州出差三天，帮我想想要带什么？"),
            ChatMessage::new("assistant", "好呀！杭州这几天可能会下雨，记得带伞。"),
            ChatMessage::new("user", "还有呢？晚上想去西湖边走走。"),
        ],
    ]
}

#[test]
fn greedy_answers_equal_the_recorded_ones() {
    if common::default_model().is_none() {
        return;
    }
    let model = LocalModel::open(&"local:gemma3-270m".parse().unwrap()).expect("open local:gemma3-270m");
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut answers = Vec::new();
    for messages in prompts() {
        let request = ChatRequest { messages, settings: GenerationSettings { max_tokens: 48, ..Default::default() } };
        let a = rt.block_on(model.chat(&request)).unwrap();
        answers
            .push(json!({"text": a.text, "output_tokens": a.output_tokens, "finish_reason": a.finish_reason.as_str()}));
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gemma3_greedy.json");
    if h2htalk_testkit::rewrite_goldens("H2HTALK_WRITE_GOLDEN") {
        std::fs::write(&path, serde_json::to_string_pretty(&Value::Array(answers)).unwrap() + "\n").unwrap();
        return;
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let want = want.as_array().unwrap();
    assert_eq!(want.len(), answers.len());
    for (i, (got, want)) in answers.iter().zip(want).enumerate() {
        assert_eq!(got, want, "prompt {i}: the greedy answer changed");
    }
}
