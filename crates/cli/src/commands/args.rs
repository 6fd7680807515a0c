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
