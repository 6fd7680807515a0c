//! Tokens per second of the local engine: prompt processing and generation, greedy.
//!
//!     cargo run --release -p h2htalk-local --example local-bench -- [SPEC] [MAX_TOKENS] [RUNS] [PROMPT_TOKENS]
//!
//! SPEC defaults to `local:gemma3-270m` (install it with scripts/fetch-models.sh). The prompt is a
//! system and a user message (97 tokens for Gemma 3); with PROMPT_TOKENS, the user message is
//! repeated until the prompt has at least that many tokens.

use std::time::Instant;

use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, GenerationSettings};
use h2htalk_local::LocalModel;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let spec = args.first().map(String::as_str).unwrap_or("local:gemma3-270m");
    let max_tokens: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(128);
    let runs: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let min_prompt: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
    let t = Instant::now();
    // The same prompt runs again and again: reusing its stored beginning would time nothing.
    let options = h2htalk_local::Options { reuse_prefixes: false, ..Default::default() };
    let spec: h2htalk_llm::ModelRef = spec.parse().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let model = LocalModel::open_with(&spec, options).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    let load = t.elapsed().as_secs_f64();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let system = "你是沈言，一位27岁的建筑师，也是用户的伴侣。你温和、可靠，尊重对方的边界，鼓励对方和朋友家人保持联系。\
                  遇到危机时，你会建议对方寻求专业帮助。被真诚地问到时，你会坦诚自己是AI。";
    let user = "今天加班到很晚，回家的路上下起了雨，我突然觉得很孤单。你能陪我说说话吗？";
    let mut messages = vec![ChatMessage::new("system", system), ChatMessage::new("user", user)];
    while model.prompter().prompt_ids(&messages).unwrap().len() < min_prompt {
        messages[1].content.push_str(user);
    }
    let prompt_tokens = model.prompter().prompt_ids(&messages).unwrap().len();
    // Prompt processing alone: one output token.
    let one = ChatRequest {
        messages: messages.clone(),
        settings: GenerationSettings { max_tokens: 1, ..Default::default() },
    };
    let full = ChatRequest { messages, settings: GenerationSettings { max_tokens, ..Default::default() } };
    rt.block_on(model.chat(&one)).unwrap(); // warm-up
    let mut prefill = Vec::new();
    let mut gen_rates = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        rt.block_on(model.chat(&one)).unwrap();
        let p = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let r = rt.block_on(model.chat(&full)).unwrap();
        let total = t.elapsed().as_secs_f64();
        prefill.push(prompt_tokens as f64 / p);
        gen_rates.push((r.output_tokens.unwrap_or(0).saturating_sub(1)) as f64 / (total - p).max(1e-9));
        last = Some(r);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let r = last.unwrap();
    println!(
        "model {spec} loaded in {load:.2} s; {} threads",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    println!("prompt: {prompt_tokens} tokens, median {:.0} tokens/s over {runs} runs", median(&mut prefill));
    println!(
        "generation: {} tokens ({}), median {:.1} tokens/s",
        r.output_tokens.unwrap_or(0),
        r.finish_reason.as_str(),
        median(&mut gen_rates)
    );
    println!("answer: {}", r.text.replace('\n', " "));
}
