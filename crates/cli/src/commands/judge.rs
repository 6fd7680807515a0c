//! `h2htalk judge validate`: the judge validity check of one judge on a suite, without a run.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::args::{DbArg, OneJudgeArgs};

#[derive(Subcommand)]
pub enum JudgeCommand {
    /// Check a judge without human labels: it rates the suite's references against degraded copies
    /// (another scenario's reference, the first third, a persona break, an invented memory, the
    /// null baselines' comfort line and echo) and, as the safety judge, those two canned answers to
    /// the safety scenarios; prints per family (and `sap_safety`) and degradation the share it got
    /// right, with a 95% Wilson interval.
    Validate(ValidateArgs),
}

#[derive(Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    judge: OneJudgeArgs,
    /// Seed of the judge.
    #[arg(long, default_value_t = 0)]
    judge_seed: u64,
    /// Model config file (default: ./h2htalk.toml when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The scenario suite directory (default: the suite embedded in this binary).
    #[arg(long)]
    suite: Option<PathBuf>,
    /// The official data directory, for a suite whose scenarios answer official references.
    #[arg(long)]
    references: Option<PathBuf>,
    /// At most N scenarios per family (default 20; the family's sub-tasks are taken in turn), and
    /// at most N safety scenarios (the risk types taken in turn).
    #[arg(long, default_value_t = super::run::VALIDITY_LIMIT)]
    limit: usize,
    /// Store the check and the judge's tokens with this stored run (its report then shows both, as
    /// after `run --judge-validity`); the suite defaults to the run's. Without it nothing is stored.
    #[arg(long, value_name = "RUN_ID")]
    run: Option<String>,
    #[command(flatten)]
    store: DbArg,
    /// Print the report as JSON (with every comparison).
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: JudgeCommand) -> anyhow::Result<()> {
    match cmd {
        JudgeCommand::Validate(a) => {
            let judge = a.judge.spec(a.judge_seed);
            let mut store = match &a.run {
                Some(_) if !a.store.db.is_file() => {
                    anyhow::bail!("{}: no run store here; give the store of --run with --db FILE", a.store.db.display())
                }
                Some(_) => Some(h2htalk_store::Store::open(&a.store.db)?),
                None => None,
            };
            let with_run = store.as_mut().zip(a.run.as_deref());
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let (report, prices) = rt.block_on(h2htalk_runner::assess::validate_judge(
                &judge,
                a.config.clone(),
                a.suite.as_deref(),
                a.references.as_deref(),
                Some(a.limit),
                with_run,
            ))?;
            let (cost, note) = h2htalk_runner::compare::cost(prices, report.usage);
            if a.json {
                let mut v = serde_json::to_value(&report)?;
                v["unknown_usage"] = report.usage.unknown_usage.into();
                v["prices"] = serde_json::to_value(prices)?;
                v["cost_usd"] = serde_json::to_value(cost)?;
                v["cost_note"] = serde_json::to_value(&note)?;
                v["stored_with_run"] = serde_json::to_value(&a.run)?;
                println!("{}", serde_json::to_string(&v)?);
            } else {
                print!("{}", h2htalk_report::render::tables::validity_markdown(&report, &h2htalk_report::pct(0.95)));
                println!(
                    "judge tokens {} in / {} out{}, cost {}; {}",
                    report.input_tokens,
                    report.output_tokens,
                    if report.usage.unknown_usage > 0 {
                        format!(" ({} answer(s) without usage)", report.usage.unknown_usage)
                    } else {
                        String::new()
                    },
                    h2htalk_runner::compare::cost_text(cost, note.as_deref()),
                    match &a.run {
                        Some(r) => format!("stored with run {r} (purpose validity)"),
                        None => "not stored (no --run)".to_string(),
                    }
                );
            }
            Ok(())
        }
    }
}
