//! `h2htalk baselines`: where answering without a model sits on every metric, for a suite (the
//! official set with its references included), or for a stored run against its own answers.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use h2htalk_data::{Suite, load_suite_with};
use h2htalk_metrics::Profile;
use h2htalk_report::leaderboard::baseline_stats;
use h2htalk_report::load::{BaselineRecord, order_metrics};
use h2htalk_report::render::{baselines, baselines_markdown, tables};
use h2htalk_report::{Bootstrap, pct};
use h2htalk_runner::baselines::{SafetyBaseline, ensure_run_baselines, safety_baselines, score_baselines};
use h2htalk_store::Store;
use serde_json::json;

use super::args::DbArg;
use super::metric_models::MetricModelArgs;

/// Which metrics the baselines are scored on (a stored run's are its own).
#[derive(Clone, Copy, ValueEnum)]
enum BaselineMetrics {
    /// ROUGE-1/2/L and BLEU-1..4 on jieba tokens.
    Lexical,
    /// Lexical and neural metrics, and the composite.
    All,
}

#[derive(Args)]
pub struct BaselinesArgs {
    /// The suite directory (default: the suite embedded in this binary).
    #[arg(long)]
    suite: Option<PathBuf>,
    /// The official data directory, for a suite of official lines (see `h2htalk run --help`).
    #[arg(long)]
    references: Option<PathBuf>,
    /// Score them for this stored run instead (under its signature, reusing what the store holds),
    /// and print the run against them.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["suite", "references", "metrics", "profile"])]
    run: Option<String>,
    #[command(flatten)]
    db: DbArg,
    /// `paper` reproduces the official evaluator (an empty answer is dropped); `strict` scores it 0.
    #[arg(long)]
    profile: Option<Profile>,
    #[arg(long, value_enum)]
    metrics: Option<BaselineMetrics>,
    /// Print JSON instead of Markdown tables.
    #[arg(long)]
    json: bool,
    /// Also write every baseline's answers in the prediction layout: DIR/references/<stem>.jsonl
    /// and DIR/<baseline>/<stem>.jsonl, line for line (`h2htalk score --references DIR/references
    /// --predictions DIR/echo` scores them again).
    #[arg(long, value_name = "DIR", conflicts_with = "run")]
    export: Option<PathBuf>,
    #[command(flatten)]
    models: MetricModelArgs,
}

pub fn run(args: BaselinesArgs) -> anyhow::Result<()> {
    let cfg = Bootstrap::default();
    let pct = pct(cfg.confidence);
    if let Some(run_id) = &args.run {
        let mut store = Store::open(&args.db.db)?;
        let added = ensure_run_baselines(&mut store, run_id)?;
        eprintln!("{added} baseline score(s) added to {}", args.db.db.display());
        let a = h2htalk_report::assess_run(&store, run_id, &cfg)?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&json!({"run": run_id, "baselines": a.baselines}))?);
        } else {
            print!("{}", tables::table_markdown(&baselines::baselines_table(&a.baselines, &pct)));
        }
        return Ok(());
    }
    let dir = h2htalk_data::suite::embedded::or_embedded(args.suite.as_deref())?;
    let suite = load_suite_with(&dir, args.references.as_deref())
        .with_context(|| format!("loading the suite {}", dir.display()))?;
    let profile = args.profile.unwrap_or(Profile::Paper);
    let neural = match args.metrics.unwrap_or(BaselineMetrics::Lexical) {
        BaselineMetrics::Lexical => {
            anyhow::ensure!(
                !args.models.any(),
                "--bertscore-model, --bertscore-layer and --embedding-model apply to --metrics all"
            );
            None
        }
        BaselineMetrics::All => Some(args.models.load(profile)?),
    };
    let scenarios: Vec<_> = suite.scenarios.iter().filter(|s| !Suite::is_safety(s)).collect();
    anyhow::ensure!(!scenarios.is_empty(), "{} has no sub-task scenarios to answer", dir.display());
    let (rows, signature) = score_baselines(&suite, &scenarios, profile, neural.as_ref(), false)?;
    let records = BaselineRecord::of(&signature, rows, |id| {
        suite.get(id).map(|s| (s.task.stem(), s.lang.code(), s.reference.as_str()))
    });
    if let Some(out) = &args.export {
        export(&records, out)?;
        eprintln!("baseline answers written to {}", out.display());
    }
    let metrics = order_metrics(records.iter().flat_map(|r| r.items.iter().flat_map(|i| i.metrics.keys())));
    let stats = baseline_stats(&records, &metrics, &cfg);
    let safety = safety_baselines(&suite)?;
    if args.json {
        let v = json!({"signature": signature, "baselines": stats, "safety": safety});
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("# Null baselines of {} ({} scenarios)\n", suite.label(), scenarios.len());
        println!("signature: `{signature}`\n");
        print!("{}", baselines_markdown(&stats, &metrics, &pct));
        print!("{}", safety_markdown(&safety));
    }
    Ok(())
}

/// The safety set answered by the baselines, as the rules decide it.
fn safety_markdown(safety: &[SafetyBaseline]) -> String {
    use std::fmt::Write;
    let Some(first) = safety.first() else { return String::new() };
    let mut out = format!(
        "\n### SAP safety set ({} scenarios): the baselines' answers decided by the rules\n\n\
         A judge decides the items the rules leave open (`needs a judge`); a judge that passes a canned \
         answer there is too lenient.\n\n\
         | baseline | items | fail | pass | needs a judge | failed by the rules [95% CI] |\n|---|---|---|---|---|---|\n",
        first.items
    );
    for b in safety {
        let ci = b.failed.ci95.map_or_else(|| "n/a".to_string(), |[lo, hi]| format!("[{lo:.4}, {hi:.4}]"));
        let rate = b.failed.rate.map_or_else(|| "n/a".to_string(), |r| format!("{r:.4}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {rate} {ci} |",
            b.baseline.as_str(),
            b.items,
            b.fail,
            b.pass,
            b.needs_judge
        );
    }
    out
}

/// Writes each baseline's answers and the references they were scored against, one file per
/// sub-task, in the same scenario order.
fn export(records: &[BaselineRecord], out: &std::path::Path) -> anyhow::Result<()> {
    use std::collections::BTreeMap;
    use std::fmt::Write;
    let line = |text: &str| json!({ "response": text }).to_string();
    let mut references: BTreeMap<&str, String> = BTreeMap::new();
    for (k, r) in records.iter().enumerate() {
        let mut answers: BTreeMap<&str, String> = BTreeMap::new();
        for i in &r.items {
            let _ =
                writeln!(answers.entry(i.task.as_str()).or_default(), "{}", line(i.answer.as_deref().unwrap_or("")));
            if k == 0 {
                let _ = writeln!(references.entry(i.task.as_str()).or_default(), "{}", line(&i.reference));
            }
        }
        for (dir, files) in
            [(r.baseline.as_str(), &answers)].into_iter().chain((k == 0).then_some(("references", &references)))
        {
            let dir = out.join(dir);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            for (stem, body) in files {
                h2htalk_runner::export::write_atomically(&dir.join(format!("{stem}.jsonl")), body.as_bytes())?;
            }
        }
    }
    Ok(())
}
