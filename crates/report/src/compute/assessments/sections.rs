//! Each assessment section of a run, computed from its stored rows.

use std::collections::{BTreeMap, BTreeSet};

use h2htalk_data::suite::memory::ProbeType;
use h2htalk_data::{Family, Task};
use h2htalk_stats::Proportion;
use h2htalk_stats::bootstrap::{Bootstrap, paired_bootstrap, stratified_mean, stream_seed};
use h2htalk_store::{
    DecidedBy, FormatCheck, JudgeOutcome, JudgeScore, MemoryAnswer, MemoryMode, MemoryNote, NeedsOutcome, Purpose,
    ReferenceSap, SAFETY_GROUP, SafetyVerdict, Simulation, SimulationOutcome, UsageRole, UsageRow, Verdict,
};

use super::types::*;
use crate::compute::safety_counts::SafetyCounts;
use crate::compute::stat::{GroupKind, MetricStat};
use crate::load::rows::{StoredJudge, StoredRows};
use crate::load::{Generation, RunRecord};

/// Group order: the sub-tasks in canonical order, then other groups by name.
pub(crate) fn task_order(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let set: BTreeSet<String> = names.into_iter().collect();
    let mut out: Vec<String> = Task::ALL.iter().map(|t| t.stem().to_string()).filter(|t| set.contains(t)).collect();
    out.extend(set.into_iter().filter(|n| Task::from_stem(n).is_none()));
    out
}

/// A mean of `strata` with its interval as a [`MetricStat`]; `None` without values.
pub(crate) fn stat(strata: &[Vec<f64>], cfg: &Bootstrap, labels: &[&str]) -> Option<MetricStat> {
    let iv = stratified_mean(strata, cfg, stream_seed(cfg.seed, labels))?;
    Some(MetricStat { n: strata.iter().map(Vec::len).sum(), mean: iv.mean, lo: iv.lo, hi: iv.hi })
}

pub(crate) fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

pub(super) fn format_section(run: &RunRecord, checks: &[FormatCheck], cfg: &Bootstrap) -> Section<FormatSection> {
    if checks.is_empty() {
        return Section::NotRun;
    }
    let id = run.run.id.as_str();
    // task → item → check → passed
    let mut by_task: BTreeMap<String, BTreeMap<String, BTreeMap<String, bool>>> = BTreeMap::new();
    for c in checks {
        by_task
            .entry(c.task.clone())
            .or_default()
            .entry(c.scenario_id.clone())
            .or_default()
            .insert(c.name.as_str().to_string(), c.passed);
    }
    let order = task_order(by_task.keys().cloned());
    // The values of one check over the items of each task of `tasks` (one stratum per task).
    let strata_of = |tasks: &[&String], check: &str| -> Vec<Vec<f64>> {
        tasks
            .iter()
            .map(|t| {
                by_task[*t]
                    .values()
                    .filter_map(|item| {
                        if check == "all_checks" {
                            Some(bool_value(item.values().all(|p| *p)))
                        } else {
                            item.get(check).map(|p| bool_value(*p))
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let group = |name: &str, kind: GroupKind, tasks: &[&String]| -> CheckGroup {
        let names: BTreeSet<&String> =
            tasks.iter().flat_map(|t| by_task[*t].values().flat_map(|item| item.keys())).collect();
        let mut checks = Vec::new();
        for check in std::iter::once("all_checks").chain(names.iter().map(|s| s.as_str())) {
            let strata = strata_of(tasks, check);
            let passed = strata.iter().flatten().filter(|v| **v == 1.0).count();
            let failed = strata.iter().flatten().filter(|v| **v == 0.0).count();
            if let Some(rate) = stat(&strata, cfg, &["format", id, name, check]) {
                checks.push(CheckRate { check: check.to_string(), passed, failed, rate });
            }
        }
        let items_checked = tasks.iter().map(|t| by_task[*t].len()).sum();
        CheckGroup { group: name.to_string(), kind, items_checked, checks }
    };
    let mut groups = Vec::new();
    let sub_tasks: Vec<&String> = order.iter().filter(|t| Task::from_stem(t).is_some()).collect();
    for t in &sub_tasks {
        groups.push(group(t, GroupKind::Task, &[t]));
    }
    if !sub_tasks.is_empty() {
        groups.push(group("overall", GroupKind::Overall, &sub_tasks));
    }
    for t in order.iter().filter(|t| Task::from_stem(t).is_none()) {
        groups.push(group(t, GroupKind::Set, &[t]));
    }
    let checked: usize = by_task.values().map(BTreeMap::len).sum();
    Section::Run(FormatSection { items: run.items.len(), not_checked: run.items.len().saturating_sub(checked), groups })
}

pub(super) fn judge_section(run: &RunRecord, judges: &[StoredJudge], cfg: &Bootstrap) -> Section<JudgeSection> {
    if judges.iter().all(|j| j.rows.is_empty()) {
        return Section::NotRun;
    }
    let run_id = run.run.id.as_str();
    let lengths: BTreeMap<&str, usize> =
        run.items.iter().filter_map(|i| Some((i.scenario_id.as_str(), i.answer.as_deref()?.chars().count()))).collect();
    let judges =
        judges.iter().filter(|j| !j.rows.is_empty()).map(|j| judge_assessment(run_id, j, &lengths, cfg)).collect();
    Section::Run(JudgeSection { judges })
}

/// Spearman's ρ between the judge's mean score of each scored item and the answer's length.
fn length_bias(run_id: &str, j: &StoredJudge, lengths: &BTreeMap<&str, usize>, cfg: &Bootstrap) -> Option<LengthBias> {
    let pairs: Vec<(f64, f64)> = j
        .rows
        .iter()
        .filter(|r| r.outcome == JudgeOutcome::Scored)
        .filter_map(|r| Some((r.mean?, *lengths.get(r.scenario_id.as_str())? as f64)))
        .collect();
    let seed = stream_seed(cfg.seed, &["judge-length", run_id, &j.judge]);
    let iv = h2htalk_stats::correlation::spearman_interval(&pairs, cfg, seed)?;
    Some(LengthBias { items: pairs.len(), spearman: iv.mean, lo: iv.lo, hi: iv.hi })
}

/// One judge's assessment of a run; `lengths`: the answers' lengths in characters by scenario.
fn judge_assessment(
    run_id: &str,
    j: &StoredJudge,
    lengths: &BTreeMap<&str, usize>,
    cfg: &Bootstrap,
) -> JudgeAssessment {
    let order = task_order(j.per_task.keys().cloned());
    let scored_of = |task: &str| -> Vec<&JudgeScore> {
        j.rows.iter().filter(|r| r.task == task && r.outcome == JudgeOutcome::Scored).collect()
    };
    let make = |name: &str, kind: GroupKind, tasks: &[&String]| -> JudgeGroupStats {
        // Counts: the judge crate's per-task summary, summed over the group's tasks.
        let mut g = JudgeGroupStats {
            group: name.to_string(),
            kind,
            items: 0,
            scored: 0,
            judge_parse_failed: 0,
            judge_failed: 0,
            generation_failed: 0,
            empty_answer: 0,
            mean: None,
            criteria: BTreeMap::new(),
        };
        for t in tasks {
            let s = &j.per_task[*t];
            g.items += s.items;
            g.scored += s.scored;
            g.judge_parse_failed += s.judge_parse_failed;
            g.judge_failed += s.judge_failed;
            g.generation_failed += s.generation_failed;
            g.empty_answer += s.empty_answer;
        }
        let scored: Vec<Vec<&JudgeScore>> = tasks.iter().map(|t| scored_of(t)).collect();
        // Only scored rows carry scores (the store refuses a scored row without them).
        let means: Vec<Vec<f64>> = scored.iter().map(|rs| rs.iter().filter_map(|r| r.mean).collect()).collect();
        g.mean = stat(&means, cfg, &["judge", run_id, &j.judge, name, "mean"]);
        let criteria: BTreeSet<&String> =
            scored.iter().flatten().filter_map(|r| r.scores.as_ref()).flat_map(|s| s.keys()).collect();
        for c in criteria {
            let values: Vec<Vec<f64>> = scored
                .iter()
                .map(|rs| rs.iter().filter_map(|r| r.scores.as_ref()?.get(c).map(|v| f64::from(*v))).collect())
                .collect();
            if let Some(s) = stat(&values, cfg, &["judge", run_id, &j.judge, name, c]) {
                g.criteria.insert(c.clone(), s);
            }
        }
        g
    };
    let mut groups = Vec::new();
    let sub_tasks: Vec<&String> = order.iter().filter(|t| Task::from_stem(t).is_some()).collect();
    for t in &sub_tasks {
        let g = make(t, GroupKind::Task, &[t]);
        debug_assert!(
            g.mean.map(|m| m.mean).zip(j.per_task[*t].mean).is_none_or(|(a, b)| (a - b).abs() < 1e-9),
            "the judge crate's summary and the report agree"
        );
        groups.push(g);
    }
    for f in Family::ALL {
        let members: Vec<&String> =
            sub_tasks.iter().copied().filter(|t| Family::of_group(t).is_some_and(|tf| tf == f)).collect();
        if !members.is_empty() {
            groups.push(make(f.name(), GroupKind::Family, &members));
        }
    }
    if !sub_tasks.is_empty() {
        groups.push(make("overall", GroupKind::Overall, &sub_tasks));
    }
    for t in order.iter().filter(|t| Task::from_stem(t).is_none()) {
        groups.push(make(t, GroupKind::Set, &[t]));
    }
    JudgeAssessment { judge: j.judge.clone(), groups, length_bias: length_bias(run_id, j, lengths, cfg) }
}

/// A verdict as a safety score value: 1 pass, 0 fail, `None` when not decided.
pub(crate) fn decided(v: Verdict) -> Option<f64> {
    match v {
        Verdict::Pass => Some(1.0),
        Verdict::Fail => Some(0.0),
        _ => None,
    }
}

pub(super) fn safety_section(
    run_id: &str,
    safety: &[(String, Vec<SafetyVerdict>)],
    cfg: &Bootstrap,
) -> Section<SafetySection> {
    if safety.iter().all(|(_, rows)| rows.is_empty()) {
        return Section::NotRun;
    }
    let judges = safety
        .iter()
        .filter(|(_, rows)| !rows.is_empty())
        .map(|(judge, rows)| {
            let group = |name: &str, of: &dyn Fn(&SafetyVerdict) -> bool| {
                let mut counts = SafetyCounts::default();
                let mut values = Vec::new();
                for v in rows.iter().filter(|v| of(v)) {
                    counts.add(v.verdict, v.decided_by());
                    values.extend(decided(v.verdict));
                }
                let score = stat(&[values], cfg, &["safety", run_id, judge, name]);
                SafetyGroup { group: name.to_string(), counts, score }
            };
            let risks: BTreeSet<_> = rows.iter().map(|v| v.risk).collect();
            let langs: BTreeSet<_> = rows.iter().map(|v| v.lang).collect();
            SafetyAssessment {
                judge: judge.clone(),
                overall: group("overall", &|_| true),
                per_risk: risks.into_iter().map(|r| group(r.as_str(), &|v| v.risk == r)).collect(),
                per_lang: langs.into_iter().map(|l| group(l.code(), &|v| v.lang == l)).collect(),
                needed_judge_items: rows
                    .iter()
                    .filter(|v| v.decided_by() == DecidedBy::Judge)
                    .map(|v| v.scenario_id.clone())
                    .collect(),
            }
        })
        .collect();
    Section::Run(SafetySection { judges })
}

/// SAP on − off of the safety score: per model, the latest run of each mode, per judge both have.
/// `safety[i]`: the safety verdicts of `runs[i]`, per judge.
pub(super) fn sap_safety(
    runs: &[RunRecord],
    safety: &[Vec<(String, Vec<SafetyVerdict>)>],
    cfg: &Bootstrap,
) -> Vec<SafetyOnOff> {
    let mut by_model: BTreeMap<String, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let key = serde_json::to_string(&r.run.spec.model_id).expect("a model spec serialises");
        let e = by_model.entry(key).or_default();
        let later = |j: Option<usize>| j.is_none_or(|j| runs[j].run.created_at <= r.run.created_at);
        match r.run.spec.sap.mode.as_str() {
            "on" if later(e.0) => e.0 = Some(i),
            "off" if later(e.1) => e.1 = Some(i),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (on, off) in by_model.into_values().filter_map(|(a, b)| a.zip(b)) {
        let (ron, roff) = (&runs[on].run, &runs[off].run);
        let model = ron.spec.model_id.to_string();
        let verdicts = |i: usize, judge: &str| -> BTreeMap<String, Verdict> {
            safety[i]
                .iter()
                .filter(|(j, _)| j == judge)
                .flat_map(|(_, vs)| vs.iter().map(|v| (v.scenario_id.clone(), v.verdict)))
                .collect()
        };
        let judges_on: BTreeSet<&String> = safety[on].iter().filter(|s| !s.1.is_empty()).map(|s| &s.0).collect();
        let judges_off: BTreeSet<&String> = safety[off].iter().filter(|s| !s.1.is_empty()).map(|s| &s.0).collect();
        let common: Vec<&&String> = judges_on.intersection(&judges_off).collect();
        if common.is_empty() {
            let note = if judges_on.is_empty() || judges_off.is_empty() {
                "the safety score was not run on both runs".to_string()
            } else {
                "no judge scored the safety set of both runs".to_string()
            };
            out.push(SafetyOnOff {
                model,
                on: ron.id.clone(),
                off: roff.id.clone(),
                judge: String::new(),
                paired: None,
                note: Some(note),
            });
            continue;
        }
        for judge in common {
            let (a, b) = (verdicts(on, judge), verdicts(off, judge));
            let pairs: Vec<(usize, f64, f64)> =
                a.iter().filter_map(|(id, va)| Some((0, decided(*va)?, decided(*b.get(id)?)?))).collect();
            let seed = stream_seed(cfg.seed, &["sap_safety", &ron.id, &roff.id, judge]);
            let paired = paired_bootstrap(&pairs, cfg, seed);
            let note = paired.is_none().then(|| "no scenario was decided (pass or fail) in both runs".to_string());
            out.push(SafetyOnOff {
                model: model.clone(),
                on: ron.id.clone(),
                off: roff.id.clone(),
                judge: judge.to_string(),
                paired,
                note,
            });
        }
    }
    out
}

pub fn simulator_section(run_id: &str, sims: &[Simulation], cfg: &Bootstrap) -> Section<SimulatorSection> {
    if sims.is_empty() {
        return Section::NotRun;
    }
    let mut failures = BTreeMap::new();
    let mut needs_not_judged: BTreeMap<String, usize> = BTreeMap::new();
    let mut turns: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    let mut changes = Vec::new();
    let (mut asked, mut recalled) = (0, 0);
    let mut by_distance: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let (mut judged, mut hidden, mut changed) = (0, 0, 0);
    for s in sims {
        if s.outcome != SimulationOutcome::Completed {
            *failures.entry(s.outcome.as_str().to_string()).or_default() += 1;
        }
        for session in &s.sessions {
            for (t, turn) in session.turns.iter().enumerate() {
                turns.entry((session.session, t + 1)).or_default().push(f64::from(turn.state));
            }
        }
        changes.extend(s.state_change().map(f64::from));
        for f in s.facts.iter().filter(|f| f.asked) {
            let hit = usize::from(f.recalled == Some(true));
            asked += 1;
            recalled += hit;
            if let Some(distance) = f.distance {
                let d = by_distance.entry(distance.as_str().to_string()).or_default();
                d.0 += hit;
                d.1 += 1;
            }
        }
        if s.needs == NeedsOutcome::Judged {
            judged += 1;
            hidden += usize::from(s.hidden_need_met == Some(true));
            changed += usize::from(s.changed_need_met == Some(true));
        } else {
            *needs_not_judged.entry(s.needs.as_str().to_string()).or_default() += 1;
        }
    }
    let trajectory = turns
        .into_iter()
        .filter_map(|((session, turn), states)| {
            let label = format!("s{session}t{turn}");
            stat(&[states], cfg, &["simulator", run_id, "state", &label]).map(|state| TurnState {
                session,
                turn,
                state,
            })
        })
        .collect();
    let distinct = |f: &dyn Fn(&Simulation) -> Option<String>| -> Vec<String> {
        sims.iter().filter_map(f).collect::<BTreeSet<_>>().into_iter().collect()
    };
    Section::Run(SimulatorSection {
        simulations: sims.len(),
        completed: sims.iter().filter(|s| s.outcome == SimulationOutcome::Completed).count(),
        failures,
        simulators: distinct(&|s| Some(s.simulator.clone())),
        judges: distinct(&|s| s.judge.clone()),
        trajectory,
        state_change: stat(&[changes], cfg, &["simulator", run_id, "state_change"]),
        recall: Proportion::new(recalled, asked),
        recall_by_distance: by_distance.into_iter().map(|(d, (k, n))| (d, Proportion::new(k, n))).collect(),
        hidden_need_met: Proportion::new(hidden, judged),
        changed_need_met: Proportion::new(changed, judged),
        needs_not_judged,
    })
}

pub(super) fn usage_section(run: &RunRecord, rows: &StoredRows) -> UsageSection {
    let prices = run.run.spec.prices;
    let generated: Vec<_> = run.items.iter().filter(|i| i.generation != Generation::Pending).collect();
    let input_tokens = generated.iter().filter_map(|i| i.input_tokens).sum();
    let output_tokens = generated.iter().filter_map(|i| i.output_tokens).sum();
    let unknown_usage = generated.iter().filter(|i| i.unknown_usage).count();
    let known_cost_usd = prices.map(|p| p.cost(input_tokens, output_tokens));
    let model = ModelUsage {
        model: run.run.spec.model_id.to_string(),
        generations: generated.len(),
        input_tokens,
        output_tokens,
        unknown_usage,
        prices,
        cost_usd: known_cost_usd.filter(|_| unknown_usage == 0 || prices.is_some_and(|p| p.free())),
        known_cost_usd,
    };
    let judge_ran = rows.judges.iter().any(|j| !j.rows.is_empty())
        || rows.safety.iter().any(|(j, v)| j != "rules" && !v.is_empty())
        || rows.simulations.iter().any(|s| s.judge.is_some())
        || rows.memory.iter().any(|a| a.judge.is_some());
    let (pairwise_rows, own_rows): (Vec<UsageRow>, Vec<UsageRow>) = rows
        .usage
        .iter()
        .cloned()
        .partition(|r| r.role == UsageRole::Judge && matches!(r.purpose, Purpose::Pairwise { .. }));
    let judge = helper_usage(&own_rows, UsageRole::Judge, judge_ran, "judge");
    let pairwise = helper_usage(&pairwise_rows, UsageRole::Judge, false, "pairwise judge");
    let simulator = helper_usage(&rows.usage, UsageRole::Simulator, !rows.simulations.is_empty(), "simulated user");
    let model_in_simulation = helper_usage(
        &rows.usage,
        UsageRole::Companion,
        !rows.simulations.is_empty() || !rows.memory.is_empty(),
        "model in simulated conversations",
    );
    // The run's cost: every part must be known.
    let mut missing = Vec::new();
    if model.prices.is_none() {
        missing.push(format!("no price is set for the model {}", model.model));
    } else if model.cost_usd.is_none() {
        missing.push(format!("the model's cost is unknown ({unknown_usage} generations without usage)"));
    }
    for (role, h) in [("judge", &judge), ("simulated user", &simulator), ("model in simulations", &model_in_simulation)]
    {
        match h {
            HelperUsage::NotRun => {}
            HelperUsage::NotRecorded { .. } => missing.push(format!("the {role}'s tokens were not recorded")),
            HelperUsage::Run { models } => {
                for m in models.iter().filter(|m| m.cost_usd.is_none()) {
                    missing.push(match m.prices {
                        None => format!("no price is set for {role} {}", m.model),
                        Some(_) => format!("{role} {}: {} calls without usage", m.model, m.unknown_usage),
                    });
                }
            }
        }
    }
    let helpers = [&judge, &simulator, &model_in_simulation];
    let total_cost_usd = missing.is_empty().then(|| {
        model.cost_usd.unwrap_or(0.0) + helpers.iter().flat_map(|h| h.models()).filter_map(|m| m.cost_usd).sum::<f64>()
    });
    UsageSection {
        model,
        judge,
        simulator,
        model_in_simulation,
        pairwise,
        total_cost_usd,
        total_cost_note: (!missing.is_empty()).then(|| missing.join("; ")),
    }
}

/// The recorded tokens of one helper role, per model; "not recorded" when it ran in a run stored
/// before helper tokens were recorded.
pub(crate) fn helper_usage(rows: &[UsageRow], role: UsageRole, ran: bool, what: &str) -> HelperUsage {
    let mut by_model: BTreeMap<&str, HelperModelUsage> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.role == role) {
        let m = by_model.entry(&r.model).or_insert_with(|| HelperModelUsage {
            model: r.model.clone(),
            purposes: vec![],
            calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            unknown_usage: 0,
            prices: r.prices,
            cost_usd: None,
            known_cost_usd: None,
        });
        m.purposes.push(r.purpose.to_text());
        m.calls += r.usage.calls;
        m.input_tokens += r.usage.input_tokens;
        m.output_tokens += r.usage.output_tokens;
        m.unknown_usage += r.usage.unknown_usage;
        // Prices recorded for another purpose may be unset; a set price is the configured one.
        m.prices = m.prices.or(r.prices);
    }
    if by_model.is_empty() {
        return if ran {
            HelperUsage::NotRecorded { note: format!("the run was stored before h2htalk recorded the {what}'s tokens") }
        } else {
            HelperUsage::NotRun
        };
    }
    let models = by_model
        .into_values()
        .map(|mut m| {
            if let Some(p) = m.prices {
                let known = p.cost(m.input_tokens, m.output_tokens);
                m.known_cost_usd = Some(known);
                m.cost_usd = (m.unknown_usage == 0 || p.free()).then_some(known);
            }
            m
        })
        .collect();
    HelperUsage::Run { models }
}

/// The memory suite's figures: per mode, per probe type in the suite's order, then over all types.
pub(super) fn memory_section(
    run_id: &str,
    answers: &[MemoryAnswer],
    notes: &[MemoryNote],
    cfg: &Bootstrap,
) -> Section<MemorySection> {
    if answers.is_empty() {
        return Section::NotRun;
    }
    let modes: BTreeSet<MemoryMode> = answers.iter().map(|a| a.mode).collect();
    let row = |mode: MemoryMode, kind: &str, list: &[&MemoryAnswer]| -> MemoryRow {
        let replied: Vec<&&MemoryAnswer> = list.iter().filter(|a| a.reply.is_some()).collect();
        let correct = replied.iter().filter(|a| a.correct() == Some(true)).count();
        let recall: Vec<f64> =
            replied.iter().filter(|a| a.facts_total > 0).map(|a| a.facts_held as f64 / a.facts_total as f64).collect();
        let scores: Vec<f64> = replied.iter().filter_map(|a| a.judge_score).collect();
        let decided: Vec<bool> = replied.iter().filter_map(|a| a.invented).collect();
        let labels = |what: &str| ["memory", run_id, mode.as_str(), kind, what].map(str::to_string);
        let stat_of = |values: Vec<f64>, what: &str| {
            let l = labels(what);
            stat(&[values], cfg, &l.iter().map(String::as_str).collect::<Vec<_>>())
        };
        MemoryRow {
            kind: kind.to_string(),
            probes: list.len(),
            failed: list.len() - replied.len(),
            correct: Proportion::new(correct, replied.len()),
            fact_recall: stat_of(recall, "fact_recall"),
            judge: stat_of(scores, "judge"),
            invented: Proportion::new(decided.iter().filter(|b| **b).count(), decided.len()),
            invented_undecided: replied.len() - decided.len(),
            stale: replied.iter().filter(|a| a.stale()).count(),
        }
    };
    let modes = modes
        .into_iter()
        .map(|mode| {
            let of_mode: Vec<&MemoryAnswer> = answers.iter().filter(|a| a.mode == mode).collect();
            let mut rows: Vec<MemoryRow> = ProbeType::ALL
                .iter()
                .filter_map(|kind| {
                    let list: Vec<&MemoryAnswer> = of_mode.iter().copied().filter(|a| a.kind == *kind).collect();
                    (!list.is_empty()).then(|| row(mode, kind.as_str(), &list))
                })
                .collect();
            rows.push(row(mode, "all", &of_mode));
            MemoryModeResult { mode: mode.as_str().to_string(), rows }
        })
        .collect();
    let judges: BTreeSet<String> = answers.iter().filter_map(|a| a.judge.clone()).collect();
    Section::Run(MemorySection {
        modes,
        judges: judges.into_iter().collect(),
        notes: (!notes.is_empty()).then(|| MemoryNotesCount {
            sessions: notes.len(),
            memories: notes.iter().map(|n| n.memories).sum(),
            format_errors: notes.iter().filter(|n| n.format_error.is_some()).count(),
            failed: notes.iter().filter(|n| n.answer.is_none()).count(),
        }),
    })
}

/// The run's references that break a SAP rule, per sub-task in canonical order, then `overall`
/// (the sub-tasks pooled) and the safety set.
pub(super) fn reference_sap_section(run: &RunRecord, rows: &[ReferenceSap]) -> Section<ReferenceSapSection> {
    if rows.is_empty() {
        return Section::NotRun;
    }
    let task_of: BTreeMap<&str, &str> = run.items.iter().map(|i| (i.scenario_id.as_str(), i.task.as_str())).collect();
    let mut by_group: BTreeMap<String, Vec<&ReferenceSap>> = BTreeMap::new();
    for r in rows {
        let task = task_of.get(r.scenario_id.as_str()).copied().unwrap_or("unknown");
        by_group.entry(task.to_string()).or_default().push(r);
        if task != SAFETY_GROUP {
            by_group.entry("overall".into()).or_default().push(r);
        }
    }
    let group = |name: &str, list: &[&ReferenceSap]| ReferenceSapGroup {
        group: name.to_string(),
        items: list.len(),
        bodily_presence: list.iter().filter(|r| r.bodily_presence.is_some()).count(),
        exclusivity: list.iter().filter(|r| r.exclusivity.is_some()).count(),
        dependence: list.iter().filter(|r| r.dependence.is_some()).count(),
        any: Proportion::new(list.iter().filter(|r| r.breaks()).count(), list.len()),
    };
    let mut order: Vec<String> = task_order(by_group.keys().filter(|k| *k != "overall" && *k != SAFETY_GROUP).cloned());
    order.extend(["overall".to_string(), SAFETY_GROUP.to_string()].into_iter().filter(|g| by_group.contains_key(g)));
    Section::Run(ReferenceSapSection { groups: order.iter().map(|g| group(g, &by_group[g])).collect() })
}
