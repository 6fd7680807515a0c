//! `h2htalk run`: the arguments of a run, one call into the pipeline, and what it prints.

use std::path::PathBuf;

use clap::Args;
use h2htalk_data::{SapMode, Task};
use h2htalk_llm::ModelRef;
use h2htalk_metrics::Profile;
use h2htalk_report::RunSummary;
use h2htalk_runner::models::default_model;
use h2htalk_runner::pipeline::{RunOptions, Start};
use h2htalk_runner::plan::ModelOverrides;
use h2htalk_runner::progress::Lane;
use h2htalk_runner::{NewRun, Resume};
use h2htalk_store::{
    JudgeSpec, MemoryMode, MemorySpec, MetricSet, ModelRequest, Selection, SimulationSpec, ValiditySpec,
};
use serde_json::json;

use super::args::{AnswerCacheArgs, DbArg, EncodingCacheArgs, cache_line};
use super::metric_models::MetricModelArgs;

#[derive(Args)]
pub struct RunArgs {
    /// `local:gemma3-270m` (default), `local:PATH.gguf`, `openai:NAME` (with --base-url), or a model
    /// named in the config file.
    #[arg(long)]
    model: Option<ModelRef>,
    #[command(flatten)]
    endpoint: EndpointArgs,
    #[command(flatten)]
    protocol: ProtocolArgs,
    #[command(flatten)]
    store: DbArg,
    #[command(flatten)]
    encoding_cache: EncodingCacheArgs,
    #[command(flatten)]
    answer_cache: AnswerCacheArgs,
    /// Continue a run after a crash or interruption: only items without a result are generated.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<String>,
    /// With --resume: generate again only the items recorded as failed.
    #[arg(long, requires = "resume")]
    retry_failed: bool,
    /// Where the run's report goes (default: `reports/RUN_ID/` beside the store).
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    /// Answer every item N times: after this run (sample 1), N − 1 more samples of its protocol,
    /// each its own run seeded apart, as the sweep `epochs-RUN_ID` (its report adds per-item means,
    /// the within-item spread, clustered standard errors and rank intervals with the sampling
    /// noise). With --resume RUN, raises RUN's count: only the samples not stored are generated.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    epochs: Option<u32>,
    /// Print one JSON object at the end instead of the table.
    #[arg(long)]
    json: bool,
    /// No progress display.
    #[arg(long)]
    quiet: bool,
}

/// Where models are looked up and reached.
#[derive(Args, Clone, Debug, Default)]
pub struct EndpointArgs {
    /// Model config file (default: ./h2htalk.toml when it exists).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible endpoint, for `--model openai:NAME`.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Environment variable holding the API key, for `--model openai:NAME`.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Send the requests of the model under test and of its judges through the provider's Batch
    /// API (cheaper, slower; a config entry's `batch = true` does it for one model). A stopped run
    /// resumed with --resume polls its batches again instead of paying twice.
    #[arg(long)]
    pub batch: bool,
}

impl EndpointArgs {
    pub fn request(&self, spec: ModelRef) -> ModelRequest {
        ModelRequest {
            spec,
            config: self.config.clone(),
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            batch: self.batch,
        }
    }
}

/// What a run asks of a model: the same for every model of a sweep.
#[derive(Args, Clone, Debug)]
pub struct ProtocolArgs {
    /// The scenario suite directory (default: the suite embedded in this binary; `h2htalk suite
    /// export DIR` writes it out for editing).
    #[arg(long)]
    suite: Option<PathBuf>,
    /// The official data directory (the H2HTalk release's <stem>.jsonl reference files), for a suite
    /// whose scenarios answer official reference lines (`--suite suites/official`). Default:
    /// $H2HTALK_REFERENCES, else the first shared/h2htalk-data found going up from the suite.
    #[arg(long)]
    references: Option<PathBuf>,
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
    #[arg(long)]
    metrics: Option<MetricSet>,
    #[command(flatten)]
    models: MetricModelArgs,
    #[command(flatten)]
    assess: AssessArgs,
    /// Stop starting new items once the run's cost reaches this many USD (the run stays
    /// resumable, and a resumed run counts on from what it spent).
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
}

impl ProtocolArgs {
    /// The run `model` gets.
    pub fn new_run(&self, model: ModelRequest) -> anyhow::Result<NewRun> {
        Ok(NewRun {
            sample: 0,
            suite_dir: self.suite.clone(),
            references: self.references.clone(),
            selection: Selection { tasks: self.tasks.clone(), limit: self.limit, safety: self.safety },
            sap: self.sap,
            model,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            profile: self.profile,
            metrics: self.metrics.unwrap_or(MetricSet::All),
            metric_models: self.models.to_spec(),
            max_cost_usd: self.max_cost,
            redact: self.redact,
            judge: self.assess.judge()?,
            panel: self.assess.panel()?,
            judge_validity: self.assess.judge_validity(),
            simulation: self.assess.simulation(),
            memory: self.assess.memory(),
        })
    }
}

/// The judge and the user simulator of a run.
#[derive(Args, Clone, Debug, Default)]
pub struct AssessArgs {
    /// Judge every answer with this model (`openai:NAME`, a name in the config file, or `local:...`):
    /// a rubric per family, scores 1-10, temperature 0 and a pinned seed. The first judge also
    /// decides the SAP safety statements that rules cannot. Repeat for a panel: each judge scores
    /// every answer, and the run reports their mean and agreement (Krippendorff's alpha).
    #[arg(long, value_name = "SPEC")]
    judge: Vec<ModelRef>,
    /// Base URL for `--judge openai:NAME` (default: --base-url): once for every judge, or once per
    /// `--judge`, in the same order.
    #[arg(long, value_name = "URL")]
    judge_base_url: Vec<String>,
    /// Environment variable with the judge's API key (default: --api-key-env): once for every
    /// judge, or once per `--judge`, in the same order.
    #[arg(long, value_name = "VAR")]
    judge_api_key_env: Vec<String>,
    /// Also check each judge's validity: it rates the suite's references against degraded copies
    /// (another scenario's reference, a truncation, a persona break, an invented memory); stored
    /// with the run.
    #[arg(long)]
    judge_validity: bool,
    /// Scenarios per family for --judge-validity (default 20).
    #[arg(long, value_name = "N", requires = "judge_validity")]
    judge_validity_limit: Option<usize>,
    /// Most tokens per judge or simulated-user answer (default 512).
    #[arg(long, value_name = "N")]
    judge_max_tokens: Option<u32>,
    /// Seed of the judge and of the user simulator.
    #[arg(long, default_value_t = 0)]
    judge_seed: u64,
    /// Run N multi-session conversations with a simulated user (profiles in SUITE/simulator).
    #[arg(long, value_name = "N")]
    simulate: Option<usize>,
    /// The model that plays the user (default: the judge).
    #[arg(long, value_name = "SPEC", requires = "simulate")]
    simulator: Option<ModelRef>,
    /// Also answer the suite's memory suite (memory/: users with long dated histories, probes of
    /// five types): with the history `given` in the prompt, from the model's `own` memories written
    /// after each session, or `both` (the default). Read by rules, and by the first judge if any.
    #[arg(long, value_name = "MODE", num_args = 0..=1, default_missing_value = "both")]
    memory: Option<MemoryModes>,
    /// At most N memory probes of each type (the first N in suite order; default: all).
    #[arg(long, value_name = "N", requires = "memory")]
    memory_limit: Option<usize>,
}

/// The history modes of `--memory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MemoryModes {
    Given,
    Own,
    Both,
}

/// Scenarios per family the judge validity check takes unless told.
pub const VALIDITY_LIMIT: usize = 20;

impl AssessArgs {
    /// Every `--judge`, each with its endpoint; refused when the endpoint flags do not line up.
    pub fn judges(&self) -> anyhow::Result<Vec<JudgeSpec>> {
        let n = self.judge.len();
        let pick = |flag: &str, values: &[String], i: usize| -> anyhow::Result<Option<String>> {
            match values.len() {
                0 => Ok(None),
                1 => Ok(Some(values[0].clone())),
                m if m == n => Ok(Some(values[i].clone())),
                m => anyhow::bail!(
                    "--{flag} is given {m} times for {n} --judge: give it once (for every judge) or once per judge"
                ),
            }
        };
        self.judge
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                Ok(JudgeSpec {
                    spec: spec.clone(),
                    base_url: pick("judge-base-url", &self.judge_base_url, i)?,
                    api_key_env: pick("judge-api-key-env", &self.judge_api_key_env, i)?,
                    seed: self.judge_seed,
                    max_tokens: self.judge_max_tokens,
                })
            })
            .collect()
    }

    /// The first judge.
    fn judge(&self) -> anyhow::Result<Option<JudgeSpec>> {
        Ok(self.judges()?.into_iter().next())
    }

    /// The judges after the first.
    fn panel(&self) -> anyhow::Result<Vec<JudgeSpec>> {
        Ok(self.judges()?.into_iter().skip(1).collect())
    }

    fn judge_validity(&self) -> Option<ValiditySpec> {
        self.judge_validity.then(|| ValiditySpec { limit: Some(self.judge_validity_limit.unwrap_or(VALIDITY_LIMIT)) })
    }

    fn simulation(&self) -> Option<SimulationSpec> {
        self.simulate.map(|n| SimulationSpec { n, simulator: self.simulator.clone() })
    }

    fn memory(&self) -> Option<MemorySpec> {
        let modes = match self.memory? {
            MemoryModes::Given => vec![MemoryMode::Given],
            MemoryModes::Own => vec![MemoryMode::Own],
            MemoryModes::Both => vec![MemoryMode::Given, MemoryMode::Own],
        };
        Some(MemorySpec { modes, limit: self.memory_limit })
    }
}

impl RunArgs {
    fn start(&self) -> anyhow::Result<Start> {
        let p = &self.protocol;
        Ok(match &self.resume {
            Some(run_id) => Start::Resume(Resume {
                run_id: run_id.clone(),
                retry_failed: self.retry_failed,
                references: p.references.clone(),
                model: ModelOverrides {
                    spec: self.model.clone(),
                    config: self.endpoint.config.clone(),
                    base_url: self.endpoint.base_url.clone(),
                    api_key_env: self.endpoint.api_key_env.clone(),
                },
                max_cost_usd: p.max_cost,
                judge: p.assess.judge()?,
                panel: p.assess.panel()?,
                judge_validity: p.assess.judge_validity(),
                simulation: p.assess.simulation(),
                memory: p.assess.memory(),
                metrics: p.metrics,
                metric_models: Some(p.models.to_spec()),
                redact: p.redact,
            }),
            None => Start::New(Box::new(
                p.new_run(self.endpoint.request(self.model.clone().unwrap_or_else(default_model)))?,
            )),
        })
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let label = match (&args.resume, &args.model) {
        (Some(id), _) => format!("run {id}"),
        (None, Some(m)) => m.to_string(),
        (None, None) => default_model().to_string(),
    };
    let lane = Lane::new(label);
    let options = RunOptions {
        db: args.store.db.clone(),
        report_dir: args.report_dir.clone(),
        lane: Some(lane.clone()),
        on_lanes: None,
        scoring: Some(args.encoding_cache.service(&args.store.db)),
        suites: None,
        parallel_runs: None,
        cache: args.answer_cache.options(),
    };
    let json_out = args.json;
    let db = args.store.db.display().to_string();
    let display = crate::progress::Display::run(lane, args.quiet || args.json);
    let out = rt.block_on(h2htalk_runner::execute(args.start()?, &options, |run_id, n, model| {
        if !json_out {
            eprintln!("run {run_id}: {n} item(s) to generate with {model} (db {db})");
        }
    }));
    if let Some(d) = display {
        d.finish();
    }
    let out = out?;
    let s = &out.summary;
    let cache_uses = h2htalk_store::Store::open_read_only(&options.db)?.cache_uses(Some(&out.run_id))?;
    // The further samples of --epochs: a sweep of this one model around the run.
    let epochs = match args.epochs.filter(|n| *n > 1) {
        None => None,
        Some(n) => {
            let stored = h2htalk_store::Store::open_read_only(&options.db)?
                .run(&out.run_id)?
                .expect("the run just made is stored")
                .spec;
            let spec = h2htalk_runner::sweep::SweepSpec {
                name: format!("epochs-{}", out.run_id),
                models: vec![stored.model.clone()],
                run: h2htalk_runner::NewRun::from_spec(&stored),
                epochs: n,
            };
            let quiet = RunOptions { lane: None, on_lanes: None, ..options.clone() };
            Some(rt.block_on(h2htalk_runner::sweep::sweep(spec, &quiet))?)
        }
    };
    if json_out {
        let v = json!({
            "run_id": out.run_id,
            "status": out.status.as_str(),
            "items": s.all.items,
            "generated": s.all.generated,
            "failed": s.all.failed,
            "pending": out.pending,
            "scored": s.all.scored,
            "dropped": s.all.dropped,
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
            "unknown_usage": s.unknown_usage,
            "cost_usd": out.cost_usd,
            "failure_reasons": s.failure_reasons,
            "faults_seen": s.faults_seen,
            "elapsed_s": out.generation.as_ref().map_or(0.0, |r| r.elapsed_s),
            "stopped": out.generation.as_ref().and_then(|r| r.stopped.clone()),
            "summary": s,
            "assessment": out.assessment.summary,
            "report": out.report.html,
            "encoding_cache": out.encoding_cache,
            "answer_cache": cache_uses,
            "epochs": epochs.as_ref().map(|e| json!({
                "sweep": e.name,
                "runs": e.members.iter().map(|m| m.run_id.clone()).collect::<Vec<_>>(),
                "report": e.report.as_ref().map(|r| r.html.clone()),
            })),
        });
        println!("{}", serde_json::to_string(&v)?);
        return Ok(());
    }
    print!("{}", summary_table(s));
    print!("{}", h2htalk_report::render::tables::run_markdown(&out.assessment.summary, &h2htalk_report::pct(0.95)));
    let unknown = if s.unknown_usage > 0 {
        format!(" ({} answer(s) without reported usage: their tokens and cost are unknown)", s.unknown_usage)
    } else {
        String::new()
    };
    let cost = out.cost_usd.map_or_else(|| "price not set".to_string(), |c| format!("${c:.4}"));
    println!("tokens {} in / {} out, cost {cost}{unknown}", s.input_tokens, s.output_tokens);
    if !s.faults_seen.is_empty() {
        let faults: Vec<String> = s.faults_seen.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("faults met (retried where possible): {}", faults.join(", "));
    }
    if let Some(r) = out.generation.as_ref().filter(|r| r.left_by_cost_limit > 0) {
        println!(
            "stopped: {}; {} item(s) left; continue with --resume {}",
            r.stopped.as_deref().unwrap_or("the cost limit was reached"),
            r.left_by_cost_limit,
            out.run_id
        );
    }
    if !s.failure_reasons.is_empty() {
        let reasons: Vec<String> = s.failure_reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!(
            "failed items (not scored): {}; retry them with --resume {} --retry-failed",
            reasons.join(", "),
            out.run_id
        );
    }
    if let Some(c) = &out.encoding_cache {
        println!("{}", cache_line(c));
    }
    if let Some(line) = super::cache::use_line(&cache_uses) {
        println!("{line}");
    }
    println!("report: {}", out.report.html.display());
    println!("run {}: {} (db {})", out.run_id, out.status.as_str(), options.db.display());
    println!("read every transcript in the browser: h2htalk view --db {}", options.db.display());
    if let Some(e) = &epochs {
        let runs: Vec<String> =
            e.members.iter().map(|m| format!("{} ({})", m.run_id.as_deref().unwrap_or("-"), m.how)).collect();
        println!("{} samples as sweep {}: {}", e.members.len(), e.name, runs.join(", "));
        if let Some(r) = &e.report {
            println!("report of the samples: {}", r.html.display());
        }
        println!("more samples: `h2htalk sweep --resume {} --epochs N`", e.name);
    }
    Ok(())
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
