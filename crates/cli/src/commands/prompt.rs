//! `h2htalk prompt show`: the exact messages a model gets for a scenario.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use h2htalk_data::load_suite_with;
use h2htalk_prompt::{Prompts, SapMode};

#[derive(Subcommand)]
pub enum PromptCommand {
    /// Print the messages of one scenario.
    Show(ShowArgs),
}

#[derive(Args)]
pub struct ShowArgs {
    /// Scenario id, e.g. dialogue_base-001 or sap-012-en.
    id: String,
    /// Put the Secure Attachment Persona principles into the system prompt.
    #[arg(long, default_value = "on")]
    sap: SapMode,
    /// The suite directory (default: the suite embedded in this binary).
    #[arg(long)]
    suite: Option<PathBuf>,
    /// The official data directory, for a suite of official lines (see `h2htalk run --help`).
    #[arg(long)]
    references: Option<PathBuf>,
    /// Print the messages as a JSON array (as sent to a chat API).
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: PromptCommand) -> anyhow::Result<()> {
    let PromptCommand::Show(args) = cmd;
    let dir = h2htalk_data::suite::embedded::or_embedded(args.suite.as_deref())?;
    let suite = load_suite_with(&dir, args.references.as_deref())?;
    let prompts = Prompts::load(&dir)?;
    let scenario = suite.get(&args.id).with_context(|| {
        format!("no scenario `{}` in {}; `h2htalk suite check` lists the suite", args.id, dir.display())
    })?;
    let messages = prompts.render(&suite, scenario, args.sap)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&messages)?);
        return Ok(());
    }
    println!(
        "# {} ({}, {}, sap {})",
        scenario.id,
        scenario.task,
        scenario.lang,
        if args.sap == SapMode::On { "on" } else { "off" }
    );
    println!("# templates {}  sap {} {}", prompts.template_hash(), prompts.sap().version, prompts.sap().hash());
    for m in messages {
        println!("\n--- {} ---\n{}", m.role, m.content);
    }
    Ok(())
}
