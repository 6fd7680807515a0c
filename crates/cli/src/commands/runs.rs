//! `h2htalk runs`: list, show and export stored runs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use h2htalk_data::Task;
use h2htalk_runner::redact::redact;
use h2htalk_runner::run;
use h2htalk_runner::store::Store;
use serde_json::json;

use super::output::write_atomically;
use super::run::summary_table;

#[derive(Subcommand)]
pub enum RunsCommand {
    /// List the runs in the store.
    List(DbArg),
    /// Show a run's provenance and summary.
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
                let model = format!(
                    "{}:{}",
                    r.provenance["model"]["provider"].as_str().unwrap_or("?"),
                    r.provenance["model"]["name"].as_str().unwrap_or("?")
                );
                let sap = r.provenance["sap"]["mode"].as_str().unwrap_or("?");
                println!("{:<26} {:<21} {:<22} {:<28} {:>5}", r.id, r.created_at, r.status, model, sap);
            }
        }
        RunsCommand::Show(args) => {
            let store = open(&args.db)?;
            let row = store.run(&args.run_id)?.with_context(|| format!("no run `{}`", args.run_id))?;
            let summary = run::summarize(&store, &args.run_id)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&json!({"run": row, "summary": summary}))?);
            } else {
                println!("run {} ({}, created {})", row.id, row.status, row.created_at);
                println!("{}", serde_json::to_string_pretty(&row.provenance)?);
                print!("{}", summary_table(&summary));
            }
        }
        RunsCommand::Export(args) => export(args)?,
    }
    Ok(())
}

fn export(args: ExportArgs) -> anyhow::Result<()> {
    let store = open(&args.db)?;
    store.run(&args.run_id)?.with_context(|| format!("no run `{}`", args.run_id))?;
    let gens: BTreeMap<String, _> =
        store.generations(&args.run_id)?.into_iter().map(|g| (g.scenario_id.clone(), g)).collect();
    let mut predictions: BTreeMap<Task, String> = BTreeMap::new();
    let mut references: BTreeMap<Task, String> = BTreeMap::new();
    let mut ids: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut not_exported = Vec::new();
    for item in store.items(&args.run_id)? {
        let Some(task) = Task::from_stem(&item.task) else {
            not_exported.push(json!({"id": item.scenario_id, "reason": "safety set (not an official sub-task)"}));
            continue;
        };
        match gens.get(&item.scenario_id) {
            Some(g) if g.status == "generated" => {
                let text = g.text.as_deref().unwrap_or("");
                let (text, reference) = if args.redact {
                    (redact(text), redact(&item.reference))
                } else {
                    (text.to_string(), item.reference.clone())
                };
                predictions.entry(task).or_default().push_str(&(json!({"response": text}).to_string() + "\n"));
                references.entry(task).or_default().push_str(&(json!({"response": reference}).to_string() + "\n"));
                ids.entry(task.stem()).or_default().push(item.scenario_id);
            }
            Some(g) => not_exported.push(json!({"id": item.scenario_id, "reason": format!("failed: {}", g.error_kind.as_deref().unwrap_or("?"))})),
            None => not_exported.push(json!({"id": item.scenario_id, "reason": "not generated yet (resume the run)"})),
        }
    }
    if predictions.is_empty() {
        bail!("run {} has no generated sub-task answers to export", args.run_id);
    }
    for sub in ["predictions", "references"] {
        std::fs::create_dir_all(args.out.join(sub))
            .with_context(|| format!("{}: cannot create", args.out.display()))?;
    }
    for (task, body) in &predictions {
        write_atomically(&args.out.join("predictions").join(format!("{task}.jsonl")), body.as_bytes())?;
        write_atomically(&args.out.join("references").join(format!("{task}.jsonl")), references[task].as_bytes())?;
    }
    let manifest =
        json!({"run_id": args.run_id, "redacted": args.redact, "line_ids": ids, "not_exported": not_exported});
    write_atomically(&args.out.join("manifest.json"), serde_json::to_string_pretty(&manifest)?.as_bytes())?;
    let n: usize = ids.values().map(Vec::len).sum();
    println!("exported {n} answers of {} sub-task(s) to {}", predictions.len(), args.out.display());
    if !not_exported.is_empty() {
        println!("{} item(s) not exported (listed with reasons in manifest.json)", not_exported.len());
    }
    println!(
        "score them with: h2htalk score --references {0}/references --predictions {0}/predictions",
        args.out.display()
    );
    Ok(())
}
