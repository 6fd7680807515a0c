//! `h2htalk runs`: list, show and export stored runs.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use h2htalk_store::Store;
use serde_json::json;

use super::run::summary_table;

#[derive(Subcommand)]
pub enum RunsCommand {
    /// List the runs in the store.
    List(DbArg),
    /// Show a run's specification and summary.
    Show(ShowArgs),
    /// Write a run's answers in the official prediction layout, with matching references.
    Export(ExportArgs),
}

#[derive(Args)]
pub struct DbArg {
    #[arg(long, default_value = "runs/h2htalk.db")]
    db: PathBuf,
}

#[derive(Args)]
pub struct ShowArgs {
    run_id: String,
    #[command(flatten)]
    db: DbArg,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ExportArgs {
    run_id: String,
    /// Output directory: predictions/<stem>.jsonl, references/<stem>.jsonl, manifest.json.
    #[arg(long)]
    out: PathBuf,
    /// Mask phone numbers, e-mail addresses, identity and bank card numbers in the exported texts.
    #[arg(long)]
    redact: bool,
    #[command(flatten)]
    db: DbArg,
}

fn open(db: &DbArg) -> anyhow::Result<Store> {
    Ok(Store::open_read_only(&db.db)?)
}

pub fn run(cmd: RunsCommand) -> anyhow::Result<()> {
    match cmd {
        RunsCommand::List(db) => {
            let store = open(&db)?;
            println!("{:<26} {:<21} {:<22} {:<28} {:>5}", "run", "created (UTC)", "status", "model", "sap");
            for r in store.runs()? {
                println!(
                    "{:<26} {:<21} {:<22} {:<28} {:>5}",
                    r.id,
                    r.created_at,
                    r.status.as_str(),
                    r.spec.model_id.to_string(),
                    r.spec.sap.mode.as_str()
                );
            }
        }
        RunsCommand::Show(args) => {
            let store = open(&args.db)?;
            let row = store.run(&args.run_id)?.with_context(|| format!("no run `{}`", args.run_id))?;
            let summary = h2htalk_report::summarize(&store, &args.run_id)?;
            let bootstrap = h2htalk_report::Bootstrap::default();
            let assessments = h2htalk_report::assess_run(&store, &args.run_id, &bootstrap)?;
            let details = h2htalk_report::run_details(&store, &args.run_id, &bootstrap)?;
            if args.json {
                let mut v = json!({
                    "run": row, "summary": summary, "assessments": assessments, "protocol": details.protocol,
                    "tags": details.tags, "sap_counterpart": details.sap_counterpart, "sap_safety": details.sap_safety,
                });
                // A run of several samples (`--epochs`): its group's figures.
                if let Some(g) = &details.samples {
                    v["samples"] = json!(g);
                }
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("run {} ({}, created {})", row.id, row.status.as_str(), row.created_at);
                println!("{}", serde_json::to_string_pretty(&row.spec)?);
                print!("{}", summary_table(&summary));
                println!();
                print!(
                    "{}",
                    h2htalk_report::render::tables::run_markdown(
                        &assessments,
                        &h2htalk_report::pct(bootstrap.confidence)
                    )
                );
                print!("{}", details.markdown);
            }
        }
        RunsCommand::Export(args) => {
            let store = open(&args.db)?;
            let e = h2htalk_runner::export::export_run(&store, &args.run_id, &args.out, args.redact)?;
            println!("exported {} answers of {} sub-task(s) to {}", e.answers, e.tasks, args.out.display());
            if e.not_exported > 0 {
                println!("{} item(s) not exported (listed with reasons in manifest.json)", e.not_exported);
            }
            if e.memory_answers > 0 {
                let out = args.out.display();
                let notes = match e.memory_notes {
                    0 => String::new(),
                    n => format!(", {n} session notes to {out}/memory/notes.jsonl"),
                };
                println!("the memory suite: {} replies to {out}/memory/answers.jsonl{notes}", e.memory_answers);
            }
            match &e.official_references {
                Some(refs) => {
                    // Lines the run did not answer are absent: --partial scores the lines given.
                    let lines = h2htalk_data::load_references(refs).map(|r| r.len()).unwrap_or(0);
                    let partial = if e.answers < lines { " --partial" } else { "" };
                    println!(
                        "official layout: each line carries the official line it answers (`index`); score them with: \
                         h2htalk score --references {} --predictions {}/predictions{partial}",
                        refs.display(),
                        args.out.display()
                    );
                }
                None => println!(
                    "score them with: h2htalk score --references {0}/references --predictions {0}/predictions",
                    args.out.display()
                ),
            }
        }
    }
    Ok(())
}
