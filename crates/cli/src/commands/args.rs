//! Argument groups shared by several commands, flattened into each (one definition per flag).

use std::path::PathBuf;

use clap::Args;
use h2htalk_llm::ModelRef;
use h2htalk_store::JudgeSpec;

/// The run store.
#[derive(Args, Clone, Debug)]
pub struct DbArg {
    /// The run store (SQLite).
    #[arg(long, default_value = "runs/h2htalk.db")]
    pub db: PathBuf,
}

/// The answer cache of a run, sweep or comparison ([`h2htalk_llm::CachedModel`]).
#[derive(Args, Clone, Debug)]
pub struct AnswerCacheArgs {
    /// The answer cache in the store: `on` takes the answers it keeps (a model's answer to the same
    /// messages with the same settings) without a request and keeps new ones; `read` only takes;
    /// `off` neither. `h2htalk cache stats` shows what it holds.
    #[arg(long, value_name = "on|read|off", default_value = "on")]
    cache: h2htalk_llm::CacheMode,
    /// Say, for each call the cache did not hold, which part of its key (model, messages,
    /// settings, sample) differs from the nearest kept call (the first 20, on standard error).
    #[arg(long)]
    explain_cache: bool,
}

impl AnswerCacheArgs {
    pub fn options(&self) -> h2htalk_runner::models::CacheOptions {
        let explain = self.explain_cache.then(|| {
            let shown = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let explain: h2htalk_llm::Explain = std::sync::Arc::new(move |why: String| {
                match shown.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
                    n if n < 20 => eprintln!("cache miss: {why}"),
                    20 => eprintln!("cache miss: (further misses not shown)"),
                    _ => {}
                }
            });
            explain
        });
        h2htalk_runner::models::CacheOptions { mode: self.cache, explain, redact: false, sample: 0 }
    }
}

/// The encoding cache of a run or sweep ([`h2htalk_runner::scorer`]).
#[derive(Args, Clone, Debug)]
pub struct EncodingCacheArgs {
    /// Encode the references again in every run instead of reading them from the encoding cache
    /// (`encoding-cache/` beside the store, or $H2HTALK_NEURAL_CACHE). Scores are the same to the
    /// bit either way; the cache saves the time of encoding the references once per model.
    #[arg(long)]
    no_encoding_cache: bool,
    /// The most megabytes the encoding cache keeps on disk; the entries used longest ago go first.
    #[arg(long, value_name = "MB", default_value_t = h2htalk_runner::scorer::DEFAULT_CACHE_BYTES >> 20, conflicts_with = "no_encoding_cache")]
    encoding_cache_max_mb: u64,
}

impl EncodingCacheArgs {
    /// The scoring service of a run or sweep with the store `db`.
    pub fn service(&self, db: &std::path::Path) -> std::sync::Arc<h2htalk_runner::scorer::ScoringService> {
        let cache = (!self.no_encoding_cache).then(|| h2htalk_runner::scorer::EncodingCacheDir {
            max_bytes: self.encoding_cache_max_mb << 20,
            ..h2htalk_runner::scorer::EncodingCacheDir::beside(db)
        });
        h2htalk_runner::scorer::ScoringService::new(cache)
    }
}

/// The line that says where the encoding cache is and what it holds.
pub fn cache_line(state: &h2htalk_runner::scorer::CacheState) -> String {
    format!(
        "encoding cache: {} ({} entries, {:.1} MB; {} references read from it, {} encoded into it{}; \
         --no-encoding-cache turns it off)",
        state.dir.display(),
        state.entries,
        state.bytes as f64 / 1e6,
        state.read,
        state.stored,
        if state.pruned > 0 { format!(", {} pruned to the bound", state.pruned) } else { String::new() }
    )
}

/// One judge model and where it is reached (`compare`, `judge validate`; `run` and `sweep` take a
/// panel of them, [`super::run::AssessArgs`]).
#[derive(Args, Clone, Debug)]
pub struct OneJudgeArgs {
    /// The judge (`openai:NAME` with --judge-base-url, a name in the config file, or `local:...`).
    /// Temperature 0 and a pinned seed.
    #[arg(long, value_name = "SPEC")]
    pub judge: ModelRef,
    /// Base URL of the judge's OpenAI-compatible endpoint, for `--judge openai:NAME`.
    #[arg(long, value_name = "URL")]
    pub judge_base_url: Option<String>,
    /// Environment variable holding the judge's API key.
    #[arg(long, value_name = "VAR")]
    pub judge_api_key_env: Option<String>,
    /// Most tokens per judge answer (default 512).
    #[arg(long, value_name = "N")]
    pub judge_max_tokens: Option<u32>,
}

impl OneJudgeArgs {
    /// The judge as a run or comparison records it, with its seed.
    pub fn spec(&self, seed: u64) -> JudgeSpec {
        JudgeSpec {
            spec: self.judge.clone(),
            base_url: self.judge_base_url.clone(),
            api_key_env: self.judge_api_key_env.clone(),
            seed,
            max_tokens: self.judge_max_tokens,
        }
    }
}
