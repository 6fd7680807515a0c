//! `h2htalk score`: score a prediction directory against a reference directory.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use h2htalk_data::{Task, TaskDir, load_predictions, load_references};
use h2htalk_metrics::{Lexical, Outcome, Profile, Summary, Tokenizer, lexical_signature, score_pair};
use rayon::prelude::*;
use serde_json::{Map, Value, json};

use super::output::write_atomically;

#[derive(Clone, Copy, ValueEnum)]
enum MetricSet {
    /// ROUGE-1/2/L and BLEU-1..4 on jieba tokens.
    Lexical,
    /// BERTScore and embedding similarity.
    Neural,
    /// Lexical and neural metrics, and the composite.
    All,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Args)]
pub struct ScoreArgs {
    /// Reference directory (official layout).
    #[arg(long)]
    references: PathBuf,
    /// Prediction directory with the same stems; lines matched by line number or by `index`.
    #[arg(long)]
    predictions: PathBuf,
    /// `paper` reproduces the official evaluator (pairs with an empty side are dropped);
    /// `strict` scores an empty prediction 0.
    #[arg(long, default_value = "paper")]
    profile: Profile,
    #[arg(long, value_enum, default_value = "lexical")]
    metrics: MetricSet,
    /// Write one JSON object per pair (JSON Lines) to this file.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Format of the summary on standard output.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// One pair's result.
struct PairResult {
    task: Task,
    index: usize,
    outcome: Outcome,
}

pub fn run(args: ScoreArgs) -> anyhow::Result<()> {
    if !matches!(args.metrics, MetricSet::Lexical) {
        bail!(
            "--metrics neural and --metrics all need the neural metrics, which this build does not include yet; use --metrics lexical"
        );
    }
    let references = load_references(&args.references).context("loading references")?;
    let predictions = load_predictions(&args.predictions, &references).context("loading predictions")?;
    let results = score_all(&references, &predictions, args.profile);

    let mut summary = Summary::new(&Lexical::NAMES);
    for r in &results {
        let values = r.outcome.scores().map(|s| s.values());
        summary.add(r.task, values.as_ref().map(|v| &v[..]), r.outcome == Outcome::EmptyPrediction);
    }
    let signature = lexical_signature(args.profile);
    if let Some(path) = &args.output {
        write_atomically(path, pair_lines(&results).as_bytes())?;
    }
    let text = match args.format {
        Format::Table => table(&summary, &signature),
        Format::Json => serde_json::to_string_pretty(&summary_json(&summary, &signature))? + "\n",
        Format::Csv => csv(&summary, &signature),
    };
    print!("{text}");
    Ok(())
}

fn score_all(references: &TaskDir, predictions: &TaskDir, profile: Profile) -> Vec<PairResult> {
    let tokenizer = Tokenizer::global();
    let pairs: Vec<(Task, usize, &str, &str)> = Task::ALL
        .iter()
        .flat_map(|&task| {
            references
                .texts(task)
                .iter()
                .zip(predictions.texts(task))
                .enumerate()
                .map(move |(i, (r, p))| (task, i + 1, p.as_str(), r.as_str()))
        })
        .collect();
    pairs
        .into_par_iter()
        .map(|(task, index, p, r)| PairResult { task, index, outcome: score_pair(tokenizer, profile, p, r) })
        .collect()
}

/// One JSON object per pair: task, index and the seven metrics, or `dropped: true`.
fn pair_lines(results: &[PairResult]) -> String {
    let mut out = String::with_capacity(results.len() * 200);
    for r in results {
        let mut obj = Map::new();
        obj.insert("task".into(), json!(r.task.stem()));
        obj.insert("index".into(), json!(r.index));
        match r.outcome.scores() {
            Some(s) => {
                for (name, v) in Lexical::NAMES.iter().zip(s.values()) {
                    obj.insert((*name).into(), json!(v));
                }
            }
            None => {
                obj.insert("dropped".into(), json!(true));
            }
        }
        out.push_str(&Value::Object(obj).to_string());
        out.push('\n');
    }
    out
}

fn fmt_mean(m: Option<f64>) -> String {
    m.map_or_else(|| "n/a".to_string(), |v| format!("{v:.4}"))
}

fn table(summary: &Summary, signature: &str) -> String {
    let mut out = String::new();
    let _ = write!(out, "{:<24} {:>6} {:>7}", "task", "scored", "dropped");
    for name in &summary.metrics {
        let _ = write!(out, " {name:>7}");
    }
    out.push('\n');
    let rows = summary.tasks.iter().map(|(t, g)| (t.stem(), g)).chain([("overall (pooled)", &summary.overall)]);
    for (name, g) in rows {
        let _ = write!(out, "{name:<24} {:>6} {:>7}", g.scored, g.dropped);
        for m in g.means() {
            let _ = write!(out, " {:>7}", fmt_mean(m));
        }
        out.push('\n');
    }
    if summary.overall.empty_predictions > 0 {
        let _ = writeln!(out, "empty predictions scored 0: {}", summary.overall.empty_predictions);
    }
    let _ = writeln!(out, "signature: {signature}");
    out
}

fn group_json(name: &str, g: &h2htalk_metrics::Group, metrics: &[&str]) -> Value {
    let means: Map<String, Value> = metrics.iter().zip(g.means()).map(|(n, m)| ((*n).to_string(), json!(m))).collect();
    json!({"task": name, "scored": g.scored, "dropped": g.dropped, "empty_predictions": g.empty_predictions, "means": means})
}

fn summary_json(summary: &Summary, signature: &str) -> Value {
    let tasks: Vec<Value> = summary.tasks.iter().map(|(t, g)| group_json(t.stem(), g, &summary.metrics)).collect();
    json!({"tasks": tasks, "overall": group_json("overall", &summary.overall, &summary.metrics), "signature": signature})
}

fn csv(summary: &Summary, signature: &str) -> String {
    let mut out = format!("task,scored,dropped,empty_predictions,{},signature\n", summary.metrics.join(","));
    let rows = summary.tasks.iter().map(|(t, g)| (t.stem(), g)).chain([("overall", &summary.overall)]);
    for (name, g) in rows {
        let means: Vec<String> = g.means().into_iter().map(|m| m.map_or(String::new(), |v| v.to_string())).collect();
        let _ = writeln!(
            out,
            "{name},{},{},{},{},\"{signature}\"",
            g.scored,
            g.dropped,
            g.empty_predictions,
            means.join(",")
        );
    }
    out
}
