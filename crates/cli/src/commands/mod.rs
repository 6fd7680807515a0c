//! Command-line definitions and dispatch.

mod data;
mod output;
mod prompt;
mod score;
mod suite;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "h2htalk", version, about = "Evaluate language models as emotional companions (H2HTalk)")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score predictions against references (official layout: one <stem>.jsonl per sub-task).
    Score(score::ScoreArgs),
    /// Inspect and validate data directories.
    #[command(subcommand)]
    Data(data::DataCommand),
    /// Show the prompts built from the suite's templates.
    #[command(subcommand)]
    Prompt(prompt::PromptCommand),
    /// Validate and describe a scenario suite.
    #[command(subcommand)]
    Suite(suite::SuiteCommand),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Score(args) => score::run(args),
        Command::Data(cmd) => data::run(cmd),
        Command::Suite(cmd) => suite::run(cmd),
        Command::Prompt(cmd) => prompt::run(cmd),
    }
}
