//! `h2htalk run`: generate with a model on the suite, store everything, score, summarise.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use h2htalk_data::{Task, load_suite};
use h2htalk_llm::{GenerationSettings, RateLimits, RetryPolicy, Scheduler};
use h2htalk_metrics::Profile;
use h2htalk_neural::NeuralSetup;
use h2htalk_runner::redact::redact;
use h2htalk_runner::run::{self, Counters, GenerateOptions, Prices, RunSummary, Selection};
use h2htalk_runner::store::Store;
use h2htalk_runner::{Prompts, SapMode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::assess::{AssessArgs, Endpoint, recorded_suite_dir};
use super::metric_models::MetricModelArgs;
use super::model::{DEFAULT_MODEL, Resolved, recorded_config, resolve};
use super::progress::Progress;

#[derive(Args)]
pub struct RunArgs {
    /// `local:gemma3-270m` (default), `local:PATH.gguf`, `openai:NAME` (with --base-url), or a model
    /// named in the config file.
    #[arg(long)]
    model: Option<String>,
    /// Model config file (default: ./h2htalk.toml when it exists).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible endpoint, for `--model openai:NAME`.
    #[arg(long)]
    base_url: Option<String>,
    /// Environment variable holding the API key, for `--model openai:NAME`.
    #[arg(long)]
    api_key_env: Option<String>,
    /// The scenario suite.
    #[arg(long, default_value = "suites")]
    suite: PathBuf,
    /// Only these sub-tasks (comma-separated stems).
    #[arg(long, value_delimiter = ',')]
    tasks: Vec<Task>,
    /// At most N scenarios per sub-task.
    #[arg(long)]
    limit: Option<usize>,
    /// Also run the SAP safety set (both languages).
    #[arg(long)]
    safety: bool,
    /// Put the Secure Attachment Persona principles into the system prompt.
    #[arg(long, default_value = "on")]
    sap: SapMode,
    /// Scoring profile: `strict` scores an empty answer 0; `paper` drops it, as the official evaluator.
    #[arg(long, default_value = "strict")]
    profile: Profile,
    /// Metrics computed once the answers are in: `all` (lexical, BERTScore, embedding similarity
    /// and the paper's composite) or `lexical`. Default `all`; recorded with the run, which
    /// `--resume` keeps.
    #[arg(long, value_enum)]
    metrics: Option<RunMetrics>,
    #[command(flatten)]
    models: MetricModelArgs,
    #[command(flatten)]
    assess: AssessArgs,
    /// The run store (SQLite).
    #[arg(long, default_value = "runs/h2htalk.db")]
    db: PathBuf,
    /// Continue a run after a crash or interruption: only items without a result are generated.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<String>,
    /// With --resume: generate again only the items recorded as failed.
    #[arg(long, requires = "resume")]
    retry_failed: bool,
    /// Stop starting new items once the cost reaches this many USD (the run stays resumable).
    #[arg(long)]
    max_cost: Option<f64>,
    /// Most tokens per answer (default: the model entry's, else 512; 64 for local models).
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Sampling temperature (default: the model entry's, else 0 = greedy).
    #[arg(long)]
    temperature: Option<f32>,
    /// Mask phone numbers, e-mail addresses, identity and bank card numbers in everything stored:
    /// prompts, references, answers and error messages (scores are then computed on the masked
    /// texts). Recorded with the run; `--resume` keeps it.
    #[arg(long)]
    redact: bool,
    /// Where the run's report goes (default: `reports/RUN_ID/` beside the store).
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    /// Print one JSON object at the end instead of the table.
    #[arg(long)]
    json: bool,
    /// No progress display.
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RunMetrics {
    Lexical,
    All,
}

/// Default answer length for local models: small models on CPUs are slow and rarely stop early.
const LOCAL_MAX_TOKENS: u32 = 64;

/// What a run was asked to use, recorded so that `--resume` can rebuild it (no secrets).
fn model_request(args: &RunArgs, spec: &str) -> Value {
    json!({"spec": spec, "config": args.config, "base_url": args.base_url, "api_key_env": args.api_key_env})
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run_async(args))
}

async fn run_async(args: RunArgs) -> anyhow::Result<()> {
    let mut store = Store::open(&args.db)?;
    args.assess.validate()?;
    let (run_id, resolved, settings, profile, neural, suite, sap, redact, items) = match &args.resume {
        Some(id) => {
            let row = store
                .run(id)?
                .with_context(|| format!("{}: no run `{id}`; `h2htalk runs list` shows the runs", args.db.display()))?;
            let p = &row.provenance;
            let request = &p["model_request"];
            let spec = args
                .model
                .clone()
                .or_else(|| request["spec"].as_str().map(String::from))
                .unwrap_or(DEFAULT_MODEL.into());
            let config = args.config.clone().or_else(|| request["config"].as_str().map(PathBuf::from));
            let base_url = args.base_url.clone().or_else(|| request["base_url"].as_str().map(String::from));
            let key_env = args.api_key_env.clone().or_else(|| request["api_key_env"].as_str().map(String::from));
            let resolved = resolve(&spec, config.as_deref(), base_url.as_deref(), key_env.as_deref())?;
            let recorded = &p["model"];
            let now = resolved.model.spec();
            if recorded["provider"] != now.provider.as_str() || recorded["name"] != now.name.as_str() {
                bail!(
                    "run {id} was made with {}:{}, not {now}; resume it with the same model",
                    recorded["provider"].as_str().unwrap_or("?"),
                    recorded["name"].as_str().unwrap_or("?")
                );
            }
            let settings: GenerationSettings =
                serde_json::from_value(p["settings"].clone()).context("the run's recorded settings")?;
            let profile: Profile =
                p["scoring"]["profile"].as_str().unwrap_or("strict").parse().map_err(anyhow::Error::msg)?;
            // Runs made before the neural metrics were wired in record no metric set: lexical.
            let metrics: RunMetrics = from_provenance(id, p, "/scoring/metrics", RunMetrics::Lexical)?;
            if let Some(asked) = args.metrics.filter(|m| *m != metrics) {
                bail!(
                    "run {id} is scored with --metrics {}, not {}; a run keeps its metric set",
                    json!(metrics).as_str().unwrap_or("?"),
                    json!(asked).as_str().unwrap_or("?")
                );
            }
            let models = if args.models.any() {
                args.models.clone()
            } else {
                from_provenance(id, p, "/scoring/models", MetricModelArgs::default())?
            };
            let neural = load_metric_models(metrics, &models, profile)?;
            let suite_dir = recorded_suite_dir(p).unwrap_or_else(|| args.suite.clone());
            let suite = load_suite(&suite_dir).context("the run's suite (for the format checks)")?;
            let sap: SapMode = from_provenance(id, p, "/sap/mode", SapMode::On)?;
            let redact: bool = from_provenance(id, p, "/redact", false)?;
            if args.redact && !redact {
                bail!("run {id} was made without --redact; a run keeps its setting (start a new run with --redact)");
            }
            let items = run::pending(&store, id, args.retry_failed)?;
            (id.clone(), resolved, settings, profile, neural, suite, sap, redact, items)
        }
        None => {
            let suite = load_suite(&args.suite)?;
            let prompts = Prompts::load(&args.suite)?;
            let spec = args.model.clone().unwrap_or(DEFAULT_MODEL.into());
            let resolved =
                resolve(&spec, args.config.as_deref(), args.base_url.as_deref(), args.api_key_env.as_deref())?;
            let mut settings = resolved.config.as_ref().map(|c| c.settings()).unwrap_or_else(|| GenerationSettings {
                max_tokens: LOCAL_MAX_TOKENS,
                ..GenerationSettings::default()
            });
            if let Some(m) = args.max_tokens {
                settings.max_tokens = m;
            }
            if let Some(t) = args.temperature {
                settings.temperature = t;
            }
            let metrics = args.metrics.unwrap_or(RunMetrics::All);
            let selection = Selection { tasks: args.tasks.clone(), limit: args.limit, safety: args.safety };
            let mut items = run::plan_items(&suite, &prompts, &selection, args.sap)?;
            if args.redact {
                for item in &mut items {
                    item.prompt = redact(&item.prompt);
                    item.reference = redact(&item.reference);
                }
            }
            if items.is_empty() {
                bail!("the selection has no scenarios (check --tasks and --limit)");
            }
            let mut provenance = run::provenance(
                &suite,
                &prompts,
                &resolved.model.spec(),
                &settings,
                &selection,
                args.sap,
                args.profile,
                prices(&resolved),
                args.max_cost,
            );
            provenance["scoring"]["metrics"] = json!(metrics);
            provenance["scoring"]["models"] = json!(args.models);
            provenance["redact"] = json!(args.redact);
            provenance["model_request"] = model_request(&args, &spec);
            provenance["model_config"] = recorded_config(&resolved.config);
            let neural = load_metric_models(metrics, &args.models, args.profile)?;
            let run_id = run::new_run_id();
            store.create_run(&run_id, &provenance, &items)?;
            (run_id, resolved, settings, args.profile, neural, suite, args.sap, args.redact, items)
        }
    };
    if !args.json {
        eprintln!(
            "run {run_id}: {} item(s) to generate with {} (db {})",
            items.len(),
            resolved.model.spec(),
            args.db.display()
        );
    }

    let report = if items.is_empty() {
        None
    } else {
        let cfg = resolved.config.as_ref();
        let policy = RetryPolicy { max_attempts: cfg.map_or(5, |c| c.max_attempts), ..RetryPolicy::default() };
        let limits = RateLimits {
            requests_per_minute: cfg.and_then(|c| c.requests_per_minute),
            tokens_per_minute: cfg.and_then(|c| c.tokens_per_minute),
        };
        let scheduler = Arc::new(Scheduler::new(resolved.model.max_concurrency(), policy, limits));
        let counters = Arc::new(Counters::default());
        counters.total.store(items.len(), std::sync::atomic::Ordering::Relaxed);
        let progress = Progress::start(
            resolved.model.spec().to_string(),
            counters.clone(),
            scheduler.clone(),
            args.quiet || args.json,
        );
        let result = run::generate(
            args.db.clone(),
            &run_id,
            resolved.model.clone(),
            scheduler,
            items,
            settings.clone(),
            GenerateOptions {
                prices: prices(&resolved),
                max_cost: args.max_cost,
                retry_failed: args.retry_failed,
                redact,
            },
            counters,
        )
        .await;
        progress.finish().await;
        Some(result?)
    };

    let pending = run::pending(&store, &run_id, false)?.len();
    run::score(&mut store, &run_id, profile, neural.as_ref())?;
    let endpoint = Endpoint {
        config: args.config.as_deref(),
        base_url: args.base_url.as_deref(),
        api_key_env: args.api_key_env.as_deref(),
    };
    let assessment = args.assess.assess(&mut store, &run_id, &suite, sap, &resolved, &settings, &endpoint).await?;
    let summary = run::summarize(&store, &run_id)?;
    let status = if pending > 0 {
        "incomplete"
    } else if summary.all.failed > 0 {
        "complete_with_failures"
    } else {
        "complete"
    };
    store.set_status(&run_id, status)?;
    let cost = prices(&resolved).cost(summary.input_tokens, summary.output_tokens);
    let report_dir = args
        .report_dir
        .clone()
        .unwrap_or_else(|| args.db.parent().unwrap_or(std::path::Path::new(".")).join("reports").join(&run_id));
    let written = h2htalk_report::write_report(&store, std::slice::from_ref(&run_id), &report_dir)
        .context("writing the run's report")?;

    if args.json {
        let out = json!({
            "run_id": run_id,
            "status": status,
            "items": summary.all.items,
            "generated": summary.all.generated,
            "failed": summary.all.failed,
            "pending": pending,
            "scored": summary.all.scored,
            "dropped": summary.all.dropped,
            "input_tokens": summary.input_tokens,
            "output_tokens": summary.output_tokens,
            "cost_usd": cost,
            "failure_reasons": summary.failure_reasons,
            "faults_seen": summary.faults_seen,
            "elapsed_s": report.as_ref().map_or(0.0, |r| r.elapsed_s),
            "summary": summary,
            "assessment": assessment.summary_json(),
            "report": written.html,
        });
        println!("{}", serde_json::to_string(&out)?);
    } else {
        print!("{}", summary_table(&summary));
        for line in assessment.lines() {
            println!("{line}");
        }
        println!("tokens {} in / {} out, cost ${cost:.4}", summary.input_tokens, summary.output_tokens);
        if !summary.faults_seen.is_empty() {
            let faults: Vec<String> = summary.faults_seen.iter().map(|(k, v)| format!("{k} {v}")).collect();
            println!("faults met (retried where possible): {}", faults.join(", "));
        }
        if let Some(r) = report.as_ref().filter(|r| r.left_by_cost_limit > 0) {
            println!(
                "stopped at the cost limit: {} item(s) left; continue with --resume {run_id}",
                r.left_by_cost_limit
            );
        }
        if !summary.failure_reasons.is_empty() {
            let reasons: Vec<String> = summary.failure_reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
            println!(
                "failed items (not scored): {}; retry them with --resume {run_id} --retry-failed",
                reasons.join(", ")
            );
        }
        println!("report: {}", written.html.display());
        println!("run {run_id}: {status} (db {})", args.db.display());
    }
    Ok(())
}

/// A setting recorded in a run's provenance at `pointer`; `default` for runs made before it was
/// recorded. A recorded value that does not parse is an error, never replaced by the default.
fn from_provenance<T: serde::de::DeserializeOwned>(
    run_id: &str,
    provenance: &Value,
    pointer: &str,
    default: T,
) -> anyhow::Result<T> {
    match provenance.pointer(pointer) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => serde_json::from_value(v.clone())
            .with_context(|| format!("run {run_id}: provenance field `{pointer}` is not readable")),
    }
}

/// The metric models load before anything is generated, so that a missing model stops the run at once.
fn load_metric_models(
    metrics: RunMetrics,
    models: &MetricModelArgs,
    profile: Profile,
) -> anyhow::Result<Option<NeuralSetup>> {
    match metrics {
        RunMetrics::All => Ok(Some(models.load(profile).context("or add `--metrics lexical` to score without them")?)),
        RunMetrics::Lexical if models.any() => {
            bail!("--bertscore-model, --bertscore-layer and --embedding-model apply to --metrics all")
        }
        RunMetrics::Lexical => Ok(None),
    }
}

fn prices(resolved: &Resolved) -> Prices {
    resolved.config.as_ref().map_or_else(Prices::default, |c| Prices {
        input_per_million: c.price_input_per_million,
        output_per_million: c.price_output_per_million,
    })
}

/// The per-group table of a run.
pub fn summary_table(s: &RunSummary) -> String {
    // The lexical metrics in the paper's order, the neural ones, the composite, then any others.
    let known =
        h2htalk_metrics::Lexical::NAMES.iter().chain(&h2htalk_neural::NeuralScores::NAMES).chain(&["composite"]);
    let mut metrics: Vec<String> = known.map(|m| m.to_string()).filter(|m| s.overall.means.contains_key(m)).collect();
    metrics.extend(s.overall.means.keys().filter(|k| !metrics.contains(k)).cloned().collect::<Vec<_>>());
    let mut out =
        format!("{:<24} {:>5} {:>5} {:>6} {:>6} {:>7}", "group", "items", "gen", "failed", "scored", "dropped");
    for m in &metrics {
        out += &format!(" {m:>7}");
    }
    out.push('\n');
    for g in s.groups.iter().chain([&s.overall]) {
        out += &format!(
            "{:<24} {:>5} {:>5} {:>6} {:>6} {:>7}",
            g.group, g.items, g.generated, g.failed, g.scored, g.dropped
        );
        for m in &metrics {
            out += &g.means.get(m).map_or_else(|| format!(" {:>7}", "n/a"), |v| format!(" {v:>7.4}"));
        }
        out.push('\n');
    }
    out
}
