//! `h2htalk sweep`: several models under one protocol, and what it prints.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::Args;
use h2htalk_llm::{Config, ModelRef};
use h2htalk_runner::models::default_config_path;
use h2htalk_runner::pipeline::RunOptions;
use h2htalk_runner::sweep::{SweepOutcome, SweepSpec, resume, sweep};

use crate::progress::Display;

use super::args::{AnswerCacheArgs, DbArg, EncodingCacheArgs, cache_line};
use super::run::{EndpointArgs, ProtocolArgs};

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep's name: its runs are recorded under it, its report goes to `reports/sweep-NAME/`,
    /// and running the same name again reuses its complete runs.
    #[arg(long, required_unless_present = "resume")]
    name: Option<String>,
    /// A model to evaluate (repeat for several): `local:...`, `openai:NAME` (all at --base-url), or a
    /// name in the config file.
    #[arg(long = "model", value_name = "SPEC")]
    models: Vec<ModelRef>,
    /// Every `[[model]]` of the config file, in file order (after any --model).
    #[arg(long)]
    all_models: bool,
    #[command(flatten)]
    endpoint: EndpointArgs,
    #[command(flatten)]
    protocol: ProtocolArgs,
    /// Run a stored sweep again after a crash or interruption, with its recorded definition:
    /// complete runs are reused, interrupted ones resumed, missing ones started.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["name", "models", "all_models"])]
    resume: Option<String>,
    #[command(flatten)]
    store: DbArg,
    #[command(flatten)]
    encoding_cache: EncodingCacheArgs,
    #[command(flatten)]
    answer_cache: AnswerCacheArgs,
    /// How many models' runs plan, generate and score at once; the others wait their turn. Each
    /// running model holds its items (and a local model its weights) in memory, so this bounds the
    /// sweep's memory whatever the number of models.
    #[arg(long, value_name = "N", default_value_t = h2htalk_runner::sweep::PARALLEL_RUNS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    parallel_models: u32,
    /// Where reports go (default: `reports/` beside the store; the sweep's in `sweep-NAME/`).
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    /// Answer every item N times, each sample its own run (requests seeded seed + k): the report
    /// adds per-item means, the within-item spread, clustered standard errors and rank intervals
    /// that include the sampling noise. With --resume, raises the stored sweep's count: only the
    /// new samples are generated.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    epochs: Option<u32>,
    /// Print one JSON object at the end instead of the table.
    #[arg(long)]
    json: bool,
    /// No progress display.
    #[arg(long)]
    quiet: bool,
}

/// The sweep of `args` (a new one, or a stored one resumed), run with `options`.
fn start(args: &SweepArgs, rt: &tokio::runtime::Runtime, options: &RunOptions) -> anyhow::Result<SweepOutcome> {
    if let Some(name) = &args.resume {
        return Ok(rt.block_on(resume(name, args.epochs, options))?);
    }
    let mut models = args.models.clone();
    if args.all_models {
        let path = args.endpoint.config.clone().or_else(default_config_path).ok_or_else(|| {
            anyhow::anyhow!("--all-models needs a config file: give --config FILE or put h2htalk.toml here")
        })?;
        let cfg = Config::load(&path)?;
        let named = cfg.model.iter().map(|m| ModelRef::Named(m.name.clone()));
        models.extend(named.filter(|n| !args.models.contains(n)));
    }
    // The template's model is replaced by each member's (the runner refuses a sweep of none).
    let first = models.first().cloned().unwrap_or_else(h2htalk_runner::models::default_model);
    let requests = models.into_iter().map(|m| args.endpoint.request(m)).collect();
    let spec = SweepSpec {
        name: args.name.clone().expect("clap requires --name"),
        models: requests,
        run: args.protocol.new_run(args.endpoint.request(first))?,
        epochs: args.epochs.unwrap_or(1),
    };
    Ok(rt.block_on(sweep(spec, options))?)
}

pub fn run(args: SweepArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // The display starts when the sweep knows its models, and stops when it returns.
    let quiet = args.quiet || args.json;
    let display = Arc::new(Mutex::new(None));
    let shown = display.clone();
    let options = RunOptions {
        db: args.store.db.clone(),
        report_dir: args.report_dir.clone(),
        lane: None,
        on_lanes: Some(Arc::new(move |lanes| *shown.lock().unwrap() = Display::sweep(lanes, quiet))),
        scoring: Some(args.encoding_cache.service(&args.store.db)),
        suites: None,
        parallel_runs: Some(args.parallel_models as usize),
        cache: args.answer_cache.options(),
    };
    let out = start(&args, &rt, &options);
    if let Some(d) = display.lock().unwrap().take() {
        d.finish();
    }
    let out = out?;
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    if args.json {
        // The JSON holds each member's error; stderr says it too, for the message below.
        for m in out.members.iter().filter(|m| m.error.is_some()) {
            eprintln!("{}: error: {}", m.model, m.error.as_deref().unwrap_or_default());
        }
        let mut v = serde_json::to_value(&out)?;
        v["report"] = serde_json::json!(out.report.as_ref().map(|r| r.html.clone()));
        println!("{}", serde_json::to_string(&v)?);
    } else {
        println!("sweep {} ({})", out.name, out.protocol);
        println!("{:<32} {:<8} {:<22} {:>9}  run", "model", "how", "status", "generated");
        for m in &out.members {
            println!(
                "{:<32} {:<8} {:<22} {:>9}  {}",
                m.model,
                m.how,
                m.status.as_deref().unwrap_or("-"),
                m.generated,
                m.run_id.as_deref().unwrap_or("-")
            );
            if let Some(e) = &m.error {
                println!("  error: {e}");
            }
        }
        match &out.report {
            Some(r) => {
                println!("report: {}", r.html.display());
                println!("read every transcript in the browser: h2htalk view --db {}", args.store.db.display());
            }
            None => println!("no report: no run of the sweep has results"),
        }
        if let Some(c) = &out.encoding_cache {
            println!("{}", cache_line(c));
        }
    }
    if out.members.iter().any(|m| m.error.is_some()) {
        anyhow::bail!(
            "some models of sweep {} failed (above); fix the cause and run `h2htalk sweep --resume {}`",
            out.name,
            out.name
        );
    }
    Ok(())
}
