//! `h2htalk prompt show`: the exact messages a model gets for a scenario.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use h2htalk_data::load_suite;
use h2htalk_runner::{Prompts, SapMode};

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
    /// The suite directory.
    #[arg(long, default_value = "suites")]
    suite: PathBuf,
    /// Print the messages as a JSON array (as sent to a chat API).
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: PromptCommand) -> anyhow::Result<()> {
    let PromptCommand::Show(args) = cmd;
    let suite = load_suite(&args.suite)?;
    let prompts = Prompts::load(&args.suite)?;
    let scenario = suite.get(&args.id).with_context(|| {
        format!("no scenario `{}` in {}; `h2htalk suite check` lists the suite", args.id, args.suite.display())
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
