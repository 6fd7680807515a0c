//! The embedded engine's greedy tokens against another engine's (llama.cpp's, in
//! `scripts/greedy-vs-llama.sh`), on the same prompt ids.
//!
//!     greedy-compare GGUF ids MESSAGES.json      prompt ids of each conversation, as JSON
//!     greedy-compare GGUF compare CASES.json     CASES: [{"prompt": [ids], "tokens": [their greedy ids]}]
//!
//! `compare` prints [`h2htalk_local::compare::Comparison::text`]: per case, how many leading tokens
//! of our own greedy answer equal theirs, and with their tokens fed (teacher forcing) at how many
//! positions our argmax is their token, with the logit gap where it is not.

use h2htalk_llm::ChatMessage;
use h2htalk_local::LocalModel;
use h2htalk_local::compare::compare;
use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [gguf, mode, file] = &args[..] else {
        eprintln!("usage: greedy-compare GGUF (ids MESSAGES.json | compare CASES.json)");
        std::process::exit(2)
    };
    let input: Value = serde_json::from_str(&std::fs::read_to_string(file).expect("read input")).expect("JSON input");
    if mode == "ids" {
        let model = LocalModel::open(&h2htalk_llm::ModelRef::Local(gguf.to_string())).expect("open the model");
        let out: Vec<Value> = input
            .as_array()
            .expect("an array of conversations")
            .iter()
            .map(|conv| {
                let messages: Vec<ChatMessage> = conv
                    .as_array()
                    .expect("a conversation is an array of [role, text]")
                    .iter()
                    .map(|m| ChatMessage::new(m[0].as_str().unwrap(), m[1].as_str().unwrap()))
                    .collect();
                json!(model.prompter().prompt_ids(&messages).expect("prompt ids"))
            })
            .collect();
        println!("{}", Value::Array(out));
        return;
    }
    let ids = |v: &Value| -> Vec<u32> { v.as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect() };
    let cases: Vec<(Vec<u32>, Vec<u32>)> =
        input.as_array().expect("an array of cases").iter().map(|c| (ids(&c["prompt"]), ids(&c["tokens"]))).collect();
    let comparison = compare(std::path::Path::new(gguf), &cases).expect("compare");
    print!("{}", comparison.text());
}
