//! Command-line definitions and dispatch.

mod annotate;
mod args;
mod baselines;
mod cache;
mod compare;
mod data;
mod judge;
mod metric_models;
mod models;
mod prompt;
mod report;
mod run;
mod runs;
mod score;
mod suite;
mod sweep;
mod view;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "h2htalk", version, about = "Evaluate language models as emotional companions (H2HTalk)")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the benchmark: generate with a model on the suite, store, score and summarise.
    Run(Box<run::RunArgs>),
    /// Evaluate several models under one protocol (reusing stored runs), with one report.
    Sweep(Box<sweep::SweepArgs>),
    /// Write leaderboards (Markdown, CSV, JSON) and a self-contained HTML report of stored runs.
    Report(report::ReportArgs),
    /// Judge stored runs against each other, pair by pair in both orders, and rank them
    /// (Bradley-Terry); judgments already stored by the same judge are reused.
    Compare(Box<compare::CompareArgs>),
    /// List, show and export stored runs.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Score predictions against references (official layout: one <stem>.jsonl per sub-task).
    Score(score::ScoreArgs),
    /// Inspect and validate data directories.
    #[command(subcommand)]
    Data(data::DataCommand),
    /// Install and locate the metric models (m3e-small for BERTScore and embedding similarity).
    #[command(subcommand)]
    Models(models::ModelsCommand),
    /// Show the prompts built from the suite's templates.
    #[command(subcommand)]
    Prompt(prompt::PromptCommand),
    /// Validate and describe a scenario suite.
    #[command(subcommand)]
    Suite(suite::SuiteCommand),
    /// Where answering without a model sits: null baselines scored like a run, for a suite or a
    /// stored run.
    Baselines(Box<baselines::BaselinesArgs>),
    /// Check a judge: `judge validate` rates references against degraded copies of them.
    #[command(subcommand)]
    Judge(judge::JudgeCommand),
    /// Judges checked against people: blinded items to rate, their ratings, and the agreement.
    #[command(subcommand)]
    Annotate(annotate::AnnotateCommand),
    /// The answer cache of a store: what it holds, and how runs used it.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Read every stored transcript in the browser: runs, items paged, filtered and searched, one
    /// item with everything stored about it, runs side by side (a local web server).
    View(view::ViewArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Sweep(args) => sweep::run(*args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(*args),
        Command::Runs(cmd) => runs::run(cmd),
        Command::Score(args) => score::run(args),
        Command::Data(cmd) => data::run(cmd),
        Command::Models(cmd) => models::run(cmd),
        Command::Suite(cmd) => suite::run(cmd),
        Command::Prompt(cmd) => prompt::run(cmd),
        Command::Judge(cmd) => judge::run(cmd),
        Command::Baselines(args) => baselines::run(*args),
        Command::Cache(cmd) => cache::run(cmd),
        Command::Annotate(cmd) => annotate::run(cmd),
        Command::View(args) => view::run(args),
    }
}
