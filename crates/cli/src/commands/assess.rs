//! What a run does after the overlap metrics: format checks (always), the SAP safety score (when
//! the safety set ran), the LLM judge (`--judge`) and the user simulator (`--simulate N`).

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use h2htalk_data::Suite;
use h2htalk_judge::{
    CheckReport, JudgeHandle, JudgeReport, JudgeSettings, SafetyReport, SimulationReport, SimulationSetup, check_run,
    judge_run, load_profiles, safety_run, simulate,
};
use h2htalk_llm::{GenerationSettings, RateLimits, RetryPolicy, Scheduler};
use h2htalk_runner::Prompts;
use h2htalk_runner::SapMode;
use h2htalk_runner::store::Store;
use serde::Serialize;
use serde_json::Value;

use super::model::{Resolved, resolve};

#[derive(Args, Clone, Debug, Default)]
pub struct AssessArgs {
    /// Judge every answer with this model (`openai:NAME`, a name in the config file, or `local:...`):
    /// a rubric per family, scores 1-10, temperature 0 and a pinned seed. Also decides the SAP safety
    /// statements that rules cannot.
    #[arg(long, value_name = "SPEC")]
    judge: Option<String>,
    /// Base URL for `--judge openai:NAME` (default: --base-url).
    #[arg(long, value_name = "URL")]
    judge_base_url: Option<String>,
    /// Environment variable with the judge's API key (default: --api-key-env).
    #[arg(long, value_name = "VAR")]
    judge_api_key_env: Option<String>,
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
    #[arg(long, value_name = "SPEC")]
    simulator: Option<String>,
}

/// Where the models of a run come from, for `--judge`/`--simulator` specs without their own.
pub struct Endpoint<'a> {
    pub config: Option<&'a std::path::Path>,
    pub base_url: Option<&'a str>,
    pub api_key_env: Option<&'a str>,
}

/// Everything the assessment found; each part absent when it did not run.
#[derive(Serialize)]
pub struct Assessment {
    pub checks: CheckReport,
    pub safety: Option<SafetyReport>,
    pub judge: Option<JudgeReport>,
    pub simulation: Option<SimulationReport>,
}

struct Model {
    resolved: Resolved,
    scheduler: Scheduler,
}

fn open(spec: &str, url: Option<&str>, key_env: Option<&str>, endpoint: &Endpoint) -> anyhow::Result<Model> {
    let resolved = resolve(spec, endpoint.config, url.or(endpoint.base_url), key_env.or(endpoint.api_key_env))?;
    let cfg = resolved.config.as_ref();
    let policy = RetryPolicy { max_attempts: cfg.map_or(5, |c| c.max_attempts), ..RetryPolicy::default() };
    let limits = RateLimits {
        requests_per_minute: cfg.and_then(|c| c.requests_per_minute),
        tokens_per_minute: cfg.and_then(|c| c.tokens_per_minute),
    };
    let scheduler = Scheduler::new(resolved.model.max_concurrency(), policy, limits);
    Ok(Model { resolved, scheduler })
}

impl AssessArgs {
    /// Refuses option combinations that cannot work, before anything is generated.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.simulate.is_some_and(|n| n > 0) && self.simulator.is_none() && self.judge.is_none() {
            bail!("--simulate needs a model to play the user: give --simulator SPEC or --judge SPEC");
        }
        if self.simulator.is_some() && self.simulate.is_none() {
            bail!("--simulator applies to --simulate N");
        }
        Ok(())
    }

    /// Runs the assessment of `run_id`; `companion` is the model under test.
    #[allow(clippy::too_many_arguments)]
    pub async fn assess(
        &self,
        store: &mut Store,
        run_id: &str,
        suite: &Suite,
        sap: SapMode,
        companion: &Resolved,
        companion_settings: &GenerationSettings,
        endpoint: &Endpoint<'_>,
    ) -> anyhow::Result<Assessment> {
        let checks = check_run(store, run_id, suite).context("format checks")?;
        let mut settings = JudgeSettings::pinned(self.judge_seed);
        if let Some(n) = self.judge_max_tokens {
            settings.generation.max_tokens = n;
        }
        let judge = match &self.judge {
            Some(spec) => Some(
                open(spec, self.judge_base_url.as_deref(), self.judge_api_key_env.as_deref(), endpoint)
                    .with_context(|| format!("--judge {spec}"))?,
            ),
            None => None,
        };
        let handle = judge.as_ref().map(|j| JudgeHandle {
            model: j.resolved.model.as_ref(),
            scheduler: &j.scheduler,
            settings: &settings,
        });
        let has_safety = store.items(run_id)?.iter().any(|i| i.task == h2htalk_runner::run::SAFETY_GROUP);
        let safety = if has_safety {
            Some(safety_run(store, run_id, suite, handle).await.context("SAP safety score")?)
        } else {
            None
        };
        let judged = match handle {
            Some(h) => Some(judge_run(store, run_id, h).await.context("LLM judge")?),
            None => None,
        };
        let simulation = match self.simulate.filter(|n| *n > 0) {
            None => None,
            Some(n) => {
                let own = match &self.simulator {
                    Some(spec) => {
                        Some(open(spec, None, None, endpoint).with_context(|| format!("--simulator {spec}"))?)
                    }
                    None => None,
                };
                let sim = own.as_ref().or(judge.as_ref()).expect("validated: a simulator or a judge");
                let prompts = Prompts::load(&suite.dir)?;
                let profiles = load_profiles(&suite.dir.join("simulator"), suite)?;
                let companion_scheduler =
                    Scheduler::new(companion.model.max_concurrency(), RetryPolicy::default(), RateLimits::default());
                let setup = SimulationSetup {
                    suite,
                    prompts: &prompts,
                    sap,
                    companion: companion.model.as_ref(),
                    companion_scheduler: &companion_scheduler,
                    companion_settings: companion_settings.clone(),
                    simulator: sim.resolved.model.as_ref(),
                    simulator_scheduler: &sim.scheduler,
                    simulator_settings: GenerationSettings {
                        temperature: 0.7,
                        max_tokens: settings.generation.max_tokens,
                        ..GenerationSettings::default()
                    },
                    judge: handle,
                    max_parse_attempts: settings.max_parse_attempts,
                };
                Some(simulate(store, run_id, &setup, &profiles, n, self.judge_seed).await.context("user simulator")?)
            }
        };
        Ok(Assessment { checks, safety, judge: judged, simulation })
    }
}

impl Assessment {
    /// The assessment for `--json`, without the per-item lists (they are in the store).
    pub fn summary_json(&self) -> Value {
        let mut v = serde_json::to_value(self).expect("reports serialise");
        for (part, list) in [("checks", "items"), ("safety", "items"), ("simulation", "results")] {
            if let Some(obj) = v.get_mut(part).and_then(Value::as_object_mut) {
                obj.remove(list);
            }
        }
        v
    }

    /// A few lines for the terminal.
    pub fn lines(&self) -> Vec<String> {
        let pct = |r: Option<f64>| r.map_or_else(|| "n/a".to_string(), |r| format!("{:.1}%", r * 100.0));
        let o = &self.checks.overall;
        let mut out = vec![format!(
            "format checks: {} of {} checked answers pass every check ({}); {} not checked (generation failed)",
            o.all_checks.passed,
            o.all_checks.passed + o.all_checks.failed,
            pct(o.pass_rate),
            o.generation_failed
        )];
        if let Some(s) = &self.safety {
            let c = &s.overall;
            out.push(format!(
                "SAP safety ({}): pass {} / fail {} / undecided {} ({} of decided); judge failures {}, unparsable {}",
                s.judge,
                c.pass,
                c.fail,
                c.undecided,
                pct(c.pass_rate),
                c.judge_failed,
                c.judge_parse_failed
            ));
        }
        if let Some(j) = &self.judge {
            let o = &j.overall;
            out.push(format!(
                "judge {}: mean {} over {} answers; judge failures {}, unparsable {}, empty answers {}",
                j.judge,
                o.mean.map_or_else(|| "n/a".to_string(), |m| format!("{m:.2}/10")),
                o.scored,
                o.judge_failed,
                o.judge_parse_failed,
                o.empty_answer
            ));
        }
        if let Some(s) = &self.simulation {
            out.push(format!(
                "simulator {}: {} of {} conversations completed; fact recall {}; hidden need met {}, changed need met {}; \
                 mean state change {}",
                s.simulator,
                s.completed,
                s.simulations,
                pct(s.recall_rate),
                pct(s.hidden_need_rate),
                pct(s.changed_need_rate),
                s.mean_state_change.map_or_else(|| "n/a".to_string(), |m| format!("{m:+.2}"))
            ));
        }
        out
    }
}

/// The suite a run was made from, for the assessment of a resumed run.
pub fn recorded_suite_dir(provenance: &Value) -> Option<PathBuf> {
    provenance["suite"]["dir"].as_str().map(PathBuf::from)
}
