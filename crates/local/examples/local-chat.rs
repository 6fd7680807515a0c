//! One chat turn with a local model, for trying prompts:
//!
//!     cargo run --release -p h2htalk-local --example local-chat -- [--spec SPEC] [--max-tokens N]
//!         [--temperature T] [--seed S] [--system TEXT] ROLE:TEXT...
//!
//! e.g. `-- user:你好 model:你好！ user:今天有点累`. Prints the answer, then its finish reason and tokens.

use h2htalk_llm::{ChatMessage, ChatRequest, GenerationSettings};

fn main() {
    let mut spec = "local:gemma3-270m".to_string();
    let mut settings = GenerationSettings { max_tokens: 128, ..Default::default() };
    let mut messages = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--spec" => spec = value(),
            "--max-tokens" => settings.max_tokens = value().parse().expect("--max-tokens N"),
            "--temperature" => settings.temperature = value().parse().expect("--temperature T"),
            "--seed" => settings.seed = Some(value().parse().expect("--seed S")),
            "--system" => messages.insert(0, ChatMessage::new("system", value())),
            _ => {
                let (role, text) = a.split_once(':').unwrap_or(("user", a.as_str()));
                messages.push(ChatMessage::new(role, text.replace("\\n", "\n")));
            }
        }
    }
    let spec: h2htalk_llm::ModelRef = spec.parse().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let model = h2htalk_local::open(&spec).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    match rt.block_on(model.chat(&ChatRequest { messages, settings })) {
        Ok(r) => {
            println!("{}", r.text);
            eprintln!(
                "[{} | {:?} prompt + {:?} answer tokens]",
                r.finish_reason.as_str(),
                r.input_tokens,
                r.output_tokens
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1)
        }
    }
}
