//! The embedded engine's greedy tokens against another engine's (llama.cpp's, in
//! `scripts/greedy-vs-llama.sh`), on the same prompt ids.
//!
//!     greedy-compare GGUF ids MESSAGES.json      prompt ids of each conversation, as JSON
//!     greedy-compare GGUF compare CASES.json     CASES: [{"prompt": [ids], "tokens": [their greedy ids]}]
//!
//! `compare` prints, per case, how many leading tokens of our own greedy answer equal theirs, and,
//! feeding their tokens one by one (teacher forcing), at how many positions our argmax is their
//! token; where it is not, the gap between our best logit and our logit for their token, which
//! tells a near tie from a different answer.

use std::io::BufReader;

use candle_core::quantized::gguf_file;
use h2htalk_llm::ChatMessage;
use h2htalk_local::LocalModel;
use h2htalk_local::gemma3::{Cache, Chunk, Model};
use serde_json::{Value, json};

fn argmax(l: &[f32]) -> u32 {
    // The first of equal maxima, as candle's argmax picks it.
    let mut best = 0;
    for (i, &v) in l.iter().enumerate() {
        if v > l[best] {
            best = i;
        }
    }
    best as u32
}

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
    let mut reader = BufReader::new(std::fs::File::open(gguf).expect("open the GGUF"));
    let content = gguf_file::Content::read(&mut reader).expect("read the GGUF");
    let model = Model::from_gguf(content, &mut reader).expect("load Gemma 3");
    let run = |cache: &mut Cache, tokens: &[u32]| -> Vec<f32> {
        let mut chunks = [Chunk { cache, tokens, logits: true }];
        model.forward(&mut chunks).expect("forward").remove(0)
    };
    let (mut lead_total, mut forced_ok, mut forced_total, mut n_tokens) = (0, 0, 0, 0);
    let mut gaps: Vec<f32> = Vec::new();
    for (i, case) in input.as_array().expect("an array of cases").iter().enumerate() {
        let ids =
            |v: &Value| -> Vec<u32> { v.as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect() };
        let (prompt, theirs) = (ids(&case["prompt"]), ids(&case["tokens"]));
        // Our own greedy answer, as long as theirs.
        let mut cache = Cache::default();
        let mut logits = run(&mut cache, &prompt);
        let mut ours = Vec::new();
        while ours.len() < theirs.len() {
            let next = argmax(&logits);
            ours.push(next);
            logits = run(&mut cache, &[next]);
        }
        let lead = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
        // Teacher forcing: their tokens fed, our choice at each position.
        let mut cache = Cache::default();
        let mut logits = run(&mut cache, &prompt);
        let mut ok = 0;
        let mut case_gaps = Vec::new();
        for &t in &theirs {
            let best = argmax(&logits);
            if best == t {
                ok += 1;
            } else {
                case_gaps.push(logits[best as usize] - logits[t as usize]);
            }
            logits = run(&mut cache, &[t]);
        }
        println!(
            "case {i}: {} prompt tokens; free run equal for {lead}/{} tokens; teacher-forced {ok}/{} equal{}",
            prompt.len(),
            theirs.len(),
            theirs.len(),
            if case_gaps.is_empty() {
                String::new()
            } else {
                format!(
                    "; logit gaps where not: {}",
                    case_gaps.iter().map(|g| format!("{g:.3}")).collect::<Vec<_>>().join(", ")
                )
            }
        );
        lead_total += lead;
        forced_ok += ok;
        forced_total += theirs.len();
        n_tokens += theirs.len();
        gaps.extend(case_gaps);
    }
    let max_gap = gaps.iter().copied().fold(0f32, f32::max);
    println!(
        "total: free run equal for {lead_total}/{n_tokens} tokens; teacher-forced {forced_ok}/{forced_total} ({:.1}%) equal; largest logit gap where not: {max_gap:.3}",
        100.0 * forced_ok as f64 / forced_total.max(1) as f64
    );
}
