//! `h2htalk compare`: stored runs judged pair by pair; the arguments, one call into the runner, and
//! what it prints.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use h2htalk_runner::compare::{CompareOptions, DEFAULT_BOOTSTRAP, compare_runs};
use h2htalk_store::Store;

use super::args::{AnswerCacheArgs, DbArg, OneJudgeArgs};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args)]
pub struct CompareArgs {
    /// The runs to compare (ids from `h2htalk runs list`); every pair is judged.
    #[arg(value_name = "RUN", num_args = 2.., required_unless_present = "sweep")]
    runs: Vec<String>,
    /// Compare every run of this sweep (`h2htalk sweep --name NAME`) instead of listing runs.
    #[arg(long, value_name = "NAME", conflicts_with = "runs")]
    sweep: Option<String>,
    #[command(flatten)]
    judge: OneJudgeArgs,
    /// The judge's seed, also the seed of the ranking's bootstrap. Judgments made with another seed
    /// are not reused.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Bootstrap resamples of the Bradley-Terry intervals.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BOOTSTRAP)]
    bootstrap: usize,
    /// Model config file a judge name is looked up in (default: ./h2htalk.toml when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The suite whose judge texts are used (default: the suite the first run was made from).
    #[arg(long)]
    suite: Option<PathBuf>,
    /// Compare runs made under different protocols (suite, selection, templates); the differences
    /// are printed with the result.
    #[arg(long)]
    allow_mixed: bool,
    /// Send the pairwise judgments through the judge's Batch API (cheaper, slower); stopped and
    /// called again with the same runs, it polls its batches instead of paying twice.
    #[arg(long)]
    batch: bool,
    #[command(flatten)]
    answer_cache: AnswerCacheArgs,
    #[command(flatten)]
    store: DbArg,
    /// `table` for reading, `json` for one JSON object.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    let options = CompareOptions {
        judge: args.judge.spec(args.seed),
        config: args.config.clone(),
        suite_dir: args.suite.clone(),
        allow_mixed: args.allow_mixed,
        bootstrap_samples: args.bootstrap,
        batch: args.batch,
        cache: args.answer_cache.options(),
    };
    if !args.store.db.is_file() {
        anyhow::bail!("{}: no run store here; give the store of the runs with --db FILE", args.store.db.display());
    }
    let mut store = Store::open(&args.store.db)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let runs: Vec<String> = match &args.sweep {
        Some(name) => {
            let sweep = store.sweep(name)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: no sweep `{name}`; `h2htalk sweep --name {name} ...` makes one",
                    args.store.db.display()
                )
            })?;
            sweep.runs.into_iter().filter_map(|m| m.run_id).collect()
        }
        None => args.runs.clone(),
    };
    let comparison = rt.block_on(compare_runs(&mut store, &runs, &options))?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&comparison)?),
        Format::Table => print!("{}", comparison.table()),
    }
    Ok(())
}
