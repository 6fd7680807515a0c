//! What the tokenizer costs a process before its first token: building it, then the first text.
//!
//!     cargo run --release -p h2htalk-metrics --example tokenizer-startup
//!
//! Each figure is one fresh process's first use, so run it a few times.

use std::time::Instant;

use h2htalk_metrics::Tokenizer;

fn main() {
    let t = Instant::now();
    let tokenizer = Tokenizer::new();
    let built = t.elapsed();
    let t = Instant::now();
    let tokens = tokenizer.tokenize("（轻轻握住你的手）告诉我发生了什么，我会一直在这里。Wi-Fi 密码是 v2.0.1。");
    let first = t.elapsed();
    println!(
        "tokenizer built in {:.2} ms; first text ({} tokens) in {:.3} ms",
        built.as_secs_f64() * 1e3,
        tokens.len(),
        first.as_secs_f64() * 1e3
    );
}
