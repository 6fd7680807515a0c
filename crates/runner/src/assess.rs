//! What a run does after the overlap metrics: format checks (always), the SAP safety score (when
//! the safety set ran), the LLM judge (`judge` in the run specification) and the user simulator
//! (`simulation`).

use h2htalk_data::Suite;
use h2htalk_judge::{
    CheckReport, JudgeHandle, JudgeReport, JudgeSettings, JudgeTexts, SafetyReport, SimulationReport, SimulationSetup,
    check_run, judge_run, load_profiles, safety_run, simulate,
};
use h2htalk_llm::{GenerationSettings, RateLimits, RetryPolicy, Scheduler};
use h2htalk_prompt::Prompts;
use h2htalk_store::{JudgeSpec, ModelRequest, RunSpec, SAFETY_GROUP, SimulationSpec, Store};
use serde::Serialize;
use serde_json::Value;

use crate::models::{Resolved, resolve};
use crate::{Result, RunError};

/// Everything the assessment found; each part absent when it did not run.
#[derive(Serialize)]
pub struct Assessment {
    pub checks: CheckReport,
    pub safety: Option<SafetyReport>,
    pub judge: Option<JudgeReport>,
    pub simulation: Option<SimulationReport>,
}

struct Opened {
    resolved: Resolved,
    scheduler: Scheduler,
}

/// A judge or simulator model: its own base URL and key, else those of the model under test.
fn open(spec: &str, base_url: Option<&str>, api_key_env: Option<&str>, run: &ModelRequest) -> Result<Opened> {
    let request = ModelRequest {
        spec: spec.to_string(),
        config: run.config.clone(),
        base_url: base_url.map(str::to_string).or_else(|| run.base_url.clone()),
        api_key_env: api_key_env.map(str::to_string).or_else(|| run.api_key_env.clone()),
    };
    let resolved = resolve(&request)?;
    let scheduler = resolved.scheduler();
    Ok(Opened { resolved, scheduler })
}

/// Refuses combinations that cannot work, before anything is generated.
pub fn validate(judge: Option<&JudgeSpec>, simulation: Option<&SimulationSpec>) -> Result<()> {
    if let Some(sim) = simulation
        && sim.n > 0
        && sim.simulator.is_none()
        && judge.is_none()
    {
        return Err(RunError::Usage(
            "--simulate needs a model to play the user: give --simulator SPEC or --judge SPEC".into(),
        ));
    }
    Ok(())
}

/// Runs the assessment of `run_id`; `companion` is the model under test.
pub async fn assess(
    store: &mut Store,
    run_id: &str,
    spec: &RunSpec,
    suite: &Suite,
    prompts: &Prompts,
    texts: &JudgeTexts,
    companion: &Resolved,
) -> Result<Assessment> {
    let checks = check_run(store, run_id, suite)?;
    let judge_spec = spec.judge.as_ref();
    let mut settings = JudgeSettings::pinned(judge_spec.map_or(0, |j| j.seed));
    if let Some(n) = judge_spec.and_then(|j| j.max_tokens) {
        settings.generation.max_tokens = n;
    }
    let judge = match judge_spec {
        Some(j) => Some(
            open(&j.spec, j.base_url.as_deref(), j.api_key_env.as_deref(), &spec.model)
                .map_err(|e| RunError::Model(format!("--judge {}: {e}", j.spec)))?,
        ),
        None => None,
    };
    let handle = judge.as_ref().map(|j| JudgeHandle {
        model: j.resolved.model.as_ref(),
        scheduler: &j.scheduler,
        settings: &settings,
        texts,
    });
    let has_safety = store.items(run_id)?.iter().any(|i| i.task == SAFETY_GROUP);
    let safety = if has_safety { Some(safety_run(store, run_id, suite, texts, handle).await?) } else { None };
    let judged = match handle {
        Some(h) => Some(judge_run(store, run_id, h).await?),
        None => None,
    };
    let simulation = match spec.simulation.as_ref().filter(|s| s.n > 0) {
        None => None,
        Some(sim_spec) => {
            let own = match &sim_spec.simulator {
                Some(s) => Some(
                    open(s, None, None, &spec.model).map_err(|e| RunError::Model(format!("--simulator {s}: {e}")))?,
                ),
                None => None,
            };
            let sim = own.as_ref().or(judge.as_ref()).ok_or_else(|| {
                RunError::Usage("--simulate needs a model to play the user: give --simulator SPEC or --judge SPEC".into())
            })?;
            let profiles = load_profiles(&suite.dir.join("simulator"), suite)?;
            let companion_scheduler =
                Scheduler::new(companion.model.max_concurrency(), RetryPolicy::default(), RateLimits::default());
            let setup = SimulationSetup {
                suite,
                prompts,
                sap: spec.sap.mode,
                companion: companion.model.as_ref(),
                companion_scheduler: &companion_scheduler,
                companion_settings: spec.settings.clone(),
                simulator: sim.resolved.model.as_ref(),
                simulator_scheduler: &sim.scheduler,
                simulator_settings: GenerationSettings {
                    temperature: 0.7,
                    max_tokens: settings.generation.max_tokens,
                    ..GenerationSettings::default()
                },
                judge: handle,
                max_parse_attempts: settings.max_parse_attempts,
                texts,
            };
            Some(simulate(store, run_id, &setup, &profiles, sim_spec.n, judge_spec.map_or(0, |j| j.seed)).await?)
        }
    };
    Ok(Assessment { checks, safety, judge: judged, simulation })
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
