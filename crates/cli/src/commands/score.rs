//! `h2htalk score`: score a prediction directory against a reference directory.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use h2htalk_data::{Task, load_partial_predictions, load_predictions, load_references};
use h2htalk_metrics::{Lexical, Outcome, Profile, Summary, composite};
use h2htalk_neural::{NeuralScores, NeuralSetup};
use h2htalk_runner::export::write_atomically;
use h2htalk_runner::score::score_pairs;
use serde_json::{Map, Value, json};

use super::metric_models::MetricModelArgs;

/// Which metrics `score` computes (a run's metric set cannot be neural only).
#[derive(Clone, Copy, ValueEnum)]
enum ScoreMetrics {
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
    /// The predictions answer only some reference lines (an export of a run made with --limit):
    /// every line carries `index`, files may be missing, and only the lines given are scored (the
    /// summary says how many of how many).
    #[arg(long)]
    partial: bool,
    /// `paper` reproduces the official evaluator (pairs with an empty side are dropped);
    /// `strict` scores an empty prediction 0.
    #[arg(long, default_value = "paper")]
    profile: Profile,
    #[arg(long, value_enum, default_value = "lexical")]
    metrics: ScoreMetrics,
    /// Write one JSON object per pair (JSON Lines) to this file.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Format of the summary on standard output.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    #[command(flatten)]
    models: MetricModelArgs,
}

/// One pair's result.
struct PairResult {
    task: Task,
    index: usize,
    outcome: Outcome,
    neural: Option<NeuralScores>,
}

impl PairResult {
    /// The pair's values in the order of `names`, or `None` if it was dropped.
    fn values(&self, metrics: ScoreMetrics) -> Option<Vec<f64>> {
        let lexical = self.outcome.scores()?;
        let mut values = Vec::new();
        if !matches!(metrics, ScoreMetrics::Neural) {
            values.extend(lexical.values());
        }
        if !matches!(metrics, ScoreMetrics::Lexical) {
            let n = self.neural.expect("neural metrics computed for every scored pair");
            values.extend(n.values());
            if matches!(metrics, ScoreMetrics::All) {
                values.push(composite(&lexical, n.bertscore, n.embedding));
            }
        }
        Some(values)
    }
}

fn metric_names(metrics: ScoreMetrics) -> Vec<&'static str> {
    let mut names = Vec::new();
    if !matches!(metrics, ScoreMetrics::Neural) {
        names.extend(Lexical::NAMES);
    }
    if !matches!(metrics, ScoreMetrics::Lexical) {
        names.extend(NeuralScores::NAMES);
    }
    if matches!(metrics, ScoreMetrics::All) {
        names.push("composite");
    }
    names
}

pub fn run(args: ScoreArgs) -> anyhow::Result<()> {
    let neural = !matches!(args.metrics, ScoreMetrics::Lexical);
    if !neural && args.models.any() {
        bail!("--bertscore-model, --bertscore-layer and --embedding-model apply to --metrics neural or all");
    }
    let references = load_references(&args.references).context("loading references")?;
    // Every pair as (task, 1-based reference line, prediction, reference).
    let pairs: Vec<(Task, usize, String, &str)> = if args.partial {
        let predictions = load_partial_predictions(&args.predictions, &references).context("loading predictions")?;
        predictions
            .into_iter()
            .flat_map(|(task, lines)| {
                let texts = references.texts(task);
                lines.into_iter().map(move |(i, p)| (task, i, p, texts[i - 1].as_str()))
            })
            .collect()
    } else {
        let predictions = load_predictions(&args.predictions, &references).context("loading predictions")?;
        references
            .files
            .keys()
            .flat_map(|&task| {
                let predicted = predictions.texts(task).to_vec();
                references
                    .texts(task)
                    .iter()
                    .zip(predicted)
                    .enumerate()
                    .map(move |(i, (r, p))| (task, i + 1, p, r.as_str()))
            })
            .collect()
    };
    if args.partial {
        eprintln!(
            "scoring {} of the {} reference lines (--partial: the lines the predictions name)",
            pairs.len(),
            references.len()
        );
    }
    // Models load before any scoring, so that a missing model stops the command at once.
    let setup = if neural { Some(args.models.load(args.profile)?) } else { None };
    let (results, neural_signature) = score_all(&pairs, args.profile, setup.as_ref())?;

    let names = metric_names(args.metrics);
    let mut summary = Summary::new(&names);
    for r in &results {
        let values = r.values(args.metrics);
        summary.add(r.task, values.as_deref(), r.outcome == Outcome::EmptyPrediction);
    }
    let lexical = !matches!(args.metrics, ScoreMetrics::Neural) || neural_signature.is_none();
    let signature = h2htalk_runner::score::signature(args.profile, lexical, neural_signature.as_deref());
    if let Some(path) = &args.output {
        write_atomically(path, pair_lines(&results, args.metrics, &names).as_bytes())?;
    }
    let text = match args.format {
        Format::Table => table(&summary, &signature),
        Format::Json => serde_json::to_string_pretty(&summary_json(&summary, &signature))? + "\n",
        Format::Csv => csv(&summary, &signature),
    };
    print!("{text}");
    Ok(())
}

/// Scores every pair through the pipeline's scoring function (the one `h2htalk run` uses); with a
/// neural setup also BERTScore and embedding similarity, and returns the neural part of the signature.
fn score_all(
    pairs: &[(Task, usize, String, &str)],
    profile: Profile,
    setup: Option<&NeuralSetup>,
) -> anyhow::Result<(Vec<PairResult>, Option<String>)> {
    let texts: Vec<(&str, &str)> = pairs.iter().map(|(_, _, p, r)| (p.as_str(), *r)).collect();
    let scored = score_pairs(profile, &texts, setup)?;
    let results = pairs
        .iter()
        .zip(scored.pairs)
        .map(|(&(task, index, _, _), s)| PairResult { task, index, outcome: s.outcome, neural: s.neural })
        .collect();
    Ok((results, scored.neural_signature))
}

/// One JSON object per pair: task, index and the metrics, or `dropped: true`.
fn pair_lines(results: &[PairResult], metrics: ScoreMetrics, names: &[&str]) -> String {
    let mut out = String::with_capacity(results.len() * 200);
    for r in results {
        let mut obj = Map::new();
        obj.insert("task".into(), json!(r.task.stem()));
        obj.insert("index".into(), json!(r.index));
        match r.values(metrics) {
            Some(values) => {
                for (name, v) in names.iter().zip(values) {
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
    let widths: Vec<usize> = summary.metrics.iter().map(|n| n.len().max(7)).collect();
    for (name, w) in summary.metrics.iter().zip(&widths) {
        let _ = write!(out, " {name:>w$}");
    }
    out.push('\n');
    let rows = summary.tasks.iter().map(|(t, g)| (t.stem(), g)).chain([("overall (pooled)", &summary.overall)]);
    for (name, g) in rows {
        let _ = write!(out, "{name:<24} {:>6} {:>7}", g.scored, g.dropped);
        for (m, w) in g.means().into_iter().zip(&widths) {
            let _ = write!(out, " {:>w$}", fmt_mean(m));
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
