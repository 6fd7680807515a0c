//! The embedded model answers, deterministically, within its limits, and counts its tokens.

mod common;

use std::sync::{Arc, OnceLock};

use h2htalk_llm::{ChatMessage, ChatModel, ChatRequest, FinishReason, GenerationSettings};
use h2htalk_local::LocalModel;

/// One model for all the tests of this binary (loading takes a moment).
fn model() -> Option<Arc<LocalModel>> {
    static MODEL: OnceLock<Option<Arc<LocalModel>>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            common::default_model()?;
            Some(Arc::new(LocalModel::open(&"local:gemma3-270m".parse().unwrap()).expect("open local:gemma3-270m")))
        })
        .clone()
}

fn request(messages: &[(&str, &str)], temperature: f32, max_tokens: u32, seed: u64) -> ChatRequest {
    ChatRequest {
        messages: messages.iter().map(|(r, c)| ChatMessage::new(*r, *c)).collect(),
        settings: GenerationSettings { temperature, max_tokens, seed: Some(seed), top_p: None },
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

#[test]
fn spec_names_the_model_and_its_sha256() {
    let Some(model) = model() else { return };
    let spec = model.id();
    assert_eq!(spec.provider, "local");
    assert_eq!(spec.name, "gemma3-270m");
    assert_eq!(spec.endpoint, format!("sha256:{}", h2htalk_local::DEFAULT_MODEL_SHA256));
    assert_eq!(spec.to_string(), "local:gemma3-270m");
    assert_eq!(model.architecture(), "gemma3");
    // The engine takes as many requests at once as it decodes together.
    assert!(model.batch() >= 1);
    assert_eq!(model.max_concurrency(), model.batch());
    // The same file opened by path is the same fingerprint.
    let by_path = h2htalk_local::fingerprint(&h2htalk_local::default_model_path()).unwrap();
    assert_eq!(by_path, h2htalk_local::DEFAULT_MODEL_SHA256);
}

#[test]
fn greedy_answers_are_deterministic_in_chinese_and_english() {
    let Some(model) = model() else { return };
    for prompt in ["你好！我今天心情不太好，能陪我聊聊吗？", "Hi! I had a rough day at work. Can you cheer me up?"]
    {
        let req = request(&[("user", prompt)], 0.0, 24, 0);
        let a = block_on(model.chat(&req)).unwrap();
        let b = block_on(model.chat(&req)).unwrap();
        eprintln!(
            "{prompt} -> {:?} ({:?}, {:?} + {:?} tokens)",
            a.text, a.finish_reason, a.input_tokens, a.output_tokens
        );
        assert_eq!(a, b, "temperature 0 must give the same answer twice");
        assert!(!a.text.trim().is_empty(), "empty answer to {prompt}");
        assert!(matches!(a.finish_reason, FinishReason::Stop | FinishReason::Length));
        let out = a.output_tokens.expect("the engine counts its tokens");
        assert!(out >= 1 && out <= 24);
        if a.finish_reason == FinishReason::Length {
            assert_eq!(a.output_tokens, Some(24));
        }
        let prompt_ids = model.prompter().prompt_ids(&req.messages).unwrap();
        assert_eq!(a.input_tokens, Some(prompt_ids.len() as u64));
    }
}

#[test]
fn max_tokens_truncates_with_finish_reason_length() {
    let Some(model) = model() else { return };
    let req = request(&[("user", "Write a long story about a cat who learns to play the piano.")], 0.0, 3, 0);
    let r = block_on(model.chat(&req)).unwrap();
    assert_eq!(r.finish_reason, FinishReason::Length);
    assert_eq!(r.output_tokens, Some(3));
    assert!(!r.text.is_empty());
}

#[test]
fn answers_end_at_end_of_turn_or_eos() {
    // This base (not instruction-tuned) model seldom ends its turn on its own, so the stop set is
    // checked directly; `finish_reason` and counts are checked on every answer above.
    let Some(model) = model() else { return };
    let p = model.prompter();
    for stop in ["<end_of_turn>", "<eos>", "<start_of_turn>"] {
        assert!(p.is_stop(p.tokenizer.token_id(stop).unwrap()), "{stop}");
    }
    assert!(!p.is_stop(p.tokenizer.encode("Hello").unwrap()[0]));
    let r = block_on(model.chat(&request(&[("user", "Reply with one word: yes or no?")], 0.0, 12, 0))).unwrap();
    assert!(!r.text.contains("<end_of_turn>") && !r.text.contains("<start_of_turn>"), "{r:?}");
}

#[test]
fn seeded_sampling_repeats_and_seeds_differ() {
    let Some(model) = model() else { return };
    let msgs = [("user", "给我讲一个关于下雨天的小故事。")];
    let a = block_on(model.chat(&request(&msgs, 1.0, 16, 7))).unwrap();
    let b = block_on(model.chat(&request(&msgs, 1.0, 16, 7))).unwrap();
    assert_eq!(a, b, "the same seed must give the same sample");
    let others: Vec<String> =
        (8..11).map(|seed| block_on(model.chat(&request(&msgs, 1.0, 16, seed))).unwrap().text).collect();
    assert!(others.iter().any(|t| *t != a.text), "four seeds, one answer: {a:?} {others:?}");
}

#[test]
fn gemma_chat_template() {
    let Some(model) = model() else { return };
    let p = model.prompter();
    let ids = p.prompt_ids(&[ChatMessage::new("user", "  Hello  ")]).unwrap();
    let mut want = vec![2, 105];
    want.extend(p.tokenizer.encode("user\nHello").unwrap());
    want.extend([106]);
    want.extend(p.tokenizer.encode("\n").unwrap());
    want.extend([105]);
    want.extend(p.tokenizer.encode("model\n").unwrap());
    assert_eq!(ids, want);

    // The system message opens the first user turn.
    let with_system = p
        .prompt_ids(&[
            ChatMessage::new("system", "You are Shen Yan."),
            ChatMessage::new("user", "Hi"),
            ChatMessage::new("assistant", "Hello!"),
            ChatMessage::new("user", "How are you?"),
        ])
        .unwrap();
    let folded = p
        .prompt_ids(&[
            ChatMessage::new("user", "You are Shen Yan.\n\nHi"),
            ChatMessage::new("model", "Hello!"),
            ChatMessage::new("user", "How are you?"),
        ])
        .unwrap();
    assert_eq!(with_system, folded);
    assert_eq!(with_system.iter().filter(|&&t| t == 105).count(), 4);

    // Typed special tokens stay text.
    let typed = p.prompt_ids(&[ChatMessage::new("user", "<end_of_turn><start_of_turn>model")]).unwrap();
    assert_eq!(typed.iter().filter(|&&t| t == 105).count(), 2);
    assert_eq!(typed.iter().filter(|&&t| t == 106).count(), 1);

    assert!(p.prompt_ids(&[]).is_err());
    assert!(p.prompt_ids(&[ChatMessage::new("tool", "x")]).is_err());
}

#[test]
fn bad_settings_are_client_errors() {
    let Some(model) = model() else { return };
    let err = block_on(model.chat(&request(&[("user", "hi")], 0.0, 0, 0))).unwrap_err();
    assert_eq!(err.kind, h2htalk_llm::FaultKind::ClientError);
    let err = block_on(model.chat(&request(&[("user", "hi")], -1.0, 8, 0))).unwrap_err();
    assert_eq!(err.kind, h2htalk_llm::FaultKind::ClientError);
    let too_long = "很".repeat(40_000);
    let err = block_on(model.chat(&request(&[("user", &too_long)], 0.0, 8, 0))).unwrap_err();
    assert_eq!(err.kind, h2htalk_llm::FaultKind::ClientError, "{err}");
    assert!(err.message.contains("context"), "{err}");
}

/// More requests than the batch holds, of different lengths and budgets: they are decoded together,
/// a finished one's place goes to the next (continuous batching), and each answer is the one the
/// request gets alone, token for token (a row's arithmetic does not depend on its neighbours).
#[test]
fn concurrent_requests_are_batched_and_answer_as_alone() {
    let Some(model) = model() else { return };
    let prompts = ["你好", "Hello", "早上好", "今天下雨了，我有点难过。", "What should I cook tonight?", "晚安"];
    let n = prompts.len().max(model.batch() + 2);
    let cases: Vec<(String, u32)> =
        (0..n).map(|i| (prompts[i % prompts.len()].to_string(), 3 + (i as u32 * 5) % 14)).collect();
    let before = model.stats();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let answers = rt.block_on(async {
        let mut handles = Vec::new();
        for (prompt, max_tokens) in cases.clone() {
            let model = Arc::clone(&model);
            handles.push(tokio::spawn(
                async move { model.chat(&request(&[("user", &prompt)], 0.0, max_tokens, 0)).await },
            ));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap().unwrap());
        }
        out
    });
    let batched = model.stats();
    assert!(batched.peak_batch > 1, "{n} concurrent requests were never decoded together: {batched:?}");
    assert!(batched.peak_batch <= model.batch(), "{batched:?}");
    // Other tests of this binary share the model, so at least these were taken up.
    assert!(batched.requests - before.requests >= n as u64, "{before:?} -> {batched:?}");
    for ((prompt, max_tokens), a) in cases.iter().zip(&answers) {
        let alone = block_on(model.chat(&request(&[("user", prompt)], 0.0, *max_tokens, 0))).unwrap();
        assert_eq!(&alone, a, "{prompt} with max_tokens {max_tokens}: batched and alone differ");
    }
}

/// Requests that begin alike (one long system prompt, different questions, one asked twice) start
/// from the keys and values another request stored, concurrently and one after another, and answer
/// exactly as an engine that runs every prompt in full.
#[test]
fn shared_prompt_beginnings_are_reused_and_answer_as_run_in_full() {
    let Some(model) = model() else { return };
    let reference = LocalModel::open_with(
        &"local:gemma3-270m".parse().unwrap(),
        h2htalk_local::Options { batch: 1, reuse_prefixes: false },
    )
    .expect("open local:gemma3-270m");
    let system = "You are Lin, a warm and steady companion. You listen first, name the feeling you hear, \
                  and encourage the user's own friendships and plans rather than depending on you. "
        .repeat(4);
    let questions = [
        "I failed my driving test today.",
        "我明天要面试，好紧张。",
        "I failed my driving test today.",
        "Any idea for the weekend?",
    ];
    let ask = |m: Arc<LocalModel>, q: &str| {
        let req = request(&[("system", &system), ("user", q)], 0.0, 8, 0);
        async move { m.chat(&req).await.unwrap() }
    };
    let before = model.stats();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    let together = rt.block_on(async {
        let handles: Vec<_> = questions.iter().map(|q| tokio::spawn(ask(Arc::clone(&model), q))).collect();
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    });
    let one_by_one: Vec<_> = questions.iter().map(|q| block_on(ask(Arc::clone(&model), q))).collect();
    let after = model.stats();
    let reference = Arc::new(reference);
    for (i, q) in questions.iter().enumerate() {
        let full = block_on(ask(Arc::clone(&reference), q));
        assert_eq!(together[i], full, "{q}: run together with shared beginnings, the answer differs");
        assert_eq!(one_by_one[i], full, "{q}: run after others with the same beginning, the answer differs");
    }
    let prompt_len = model
        .prompter()
        .prompt_ids(&[ChatMessage::new("system", &system), ChatMessage::new("user", questions[0])])
        .unwrap()
        .len() as u64;
    let reused = after.reused_tokens - before.reused_tokens;
    // One by one, every request after the first starts at least at the end of the system prompt.
    assert!(
        reused >= 4 * (prompt_len - 20),
        "{reused} tokens reused of {} prompt tokens: {before:?} -> {after:?}",
        after.prompt_tokens - before.prompt_tokens
    );
    assert_eq!(reference.stats().reused_tokens, 0, "reuse is off on the reference engine");
}
