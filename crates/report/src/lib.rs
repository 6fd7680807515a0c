//! H2HTalk reports: statistics of stored runs and the files people read.
//!
//! A report is made in three steps, one module each, and reads the store only:
//!
//! - [`load`]: runs read from the store ([`h2htalk_store::Store`]), every item with its
//!   generation and scores, validated (a malformed score is an error naming the run, the scenario
//!   and the field, never a silent 0); the stored rows of every assessment; the scenarios' tags.
//! - [`compute`]: per sub-task, per family and overall means of every metric (the composite
//!   included) with intervals and coverage, a ranking, paired comparisons, SAP on/off pairs
//!   ([`leaderboard`]); per run, format checks, rubric judges and their panel, the judge validity
//!   check, the SAP safety score, the user simulator, tokens and cost ([`assessments`]); every
//!   measure by scenario tag ([`tags`]).
//! - [`render`]: `leaderboard.json`, `leaderboard.md`, `leaderboard.csv` and one self-contained
//!   `report.html` (inline SVG charts, inline script and style, the data embedded as JSON, no
//!   network), all written from the same [`Leaderboard`] value.

pub mod compute;
pub mod error;
pub mod format;
pub mod load;
pub mod render;

use std::path::{Path, PathBuf};

use h2htalk_store::Store;

pub use compute::assessments::{self, Assessments, RunAssessment};
pub use compute::leaderboard::{self, Leaderboard, build};
pub use compute::summary::{self, GroupSummary, RunSummary, summarize};
pub use compute::tags;
pub use error::ReportError;
pub use format::pct;
pub use h2htalk_stats::{Bootstrap, bootstrap};
pub use load::{RunRecord, load_runs};

/// How a report is computed.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub bootstrap: Bootstrap,
    /// The metric to rank and compare by (default: the first of composite, bertscore, embedding,
    /// rougeL, then any other, that every run has).
    pub rank_metric: Option<String>,
    /// Mask personal data ([`h2htalk_data::redact`]) in the transcripts the report shows.
    pub redact: bool,
    /// Rank runs of different protocols together (each row is then marked with its protocol);
    /// otherwise such a report is refused, naming what differs.
    pub allow_mixed: bool,
}

/// The files a report wrote.
#[derive(Clone, Debug)]
pub struct ReportPaths {
    pub dir: PathBuf,
    pub html: PathBuf,
    pub json: PathBuf,
    pub markdown: PathBuf,
    pub csv: PathBuf,
}

/// Writes the report of `run_ids` (every run in the store when empty) into `out_dir` with the
/// default options, and returns the paths written. `h2htalk run` calls it with its one run.
pub fn write_report(store: &Store, run_ids: &[String], out_dir: &Path) -> Result<ReportPaths, ReportError> {
    write_report_with(store, run_ids, out_dir, &Options::default())
}

/// [`write_report`] with options; also returns the leaderboard.
pub fn write_report_with(
    store: &Store,
    run_ids: &[String],
    out_dir: &Path,
    options: &Options,
) -> Result<ReportPaths, ReportError> {
    let db = store.path().to_string();
    // Every figure is computed without the prompts and references; only the transcripts the page
    // shows read theirs back, so memory stays near one run's texts however many runs there are.
    let mut runs = load::load_runs_with(store, &db, run_ids, load::Texts::Deferred)?;
    check_protocols(&runs, options.allow_mixed)?;
    use h2htalk_data::redact::redact;
    if options.redact {
        // Before anything is computed: answer lengths enter the judges' length-bias figures.
        for item in runs.iter_mut().flat_map(|r| r.items.iter_mut()) {
            item.answer = item.answer.as_deref().map(redact);
            item.error = item.error.as_deref().map(redact);
        }
    }
    let mut lb = build(&runs, &options.bootstrap, options.rank_metric.as_deref())?;
    lb.assessments = assessments::assess(store, &runs, &options.bootstrap)?;
    lb.baselines = leaderboard::baseline_stats(&load::baselines(store, &runs)?, &lb.metrics, &options.bootstrap);
    let tag_data = load::tags::load(store, &runs)?;
    lb.tags = Some(tags::build(&lb, &runs, &tag_data, &options.bootstrap));
    let shown = render::shown(&lb, &runs);
    load::fill_texts(store, &mut runs, |i| shown.keeps(i))?;
    if options.redact {
        for item in runs.iter_mut().flat_map(|r| r.items.iter_mut()).filter(|i| shown.keeps(i)) {
            for m in &mut item.prompt {
                m.content = redact(&m.content);
            }
            item.reference = redact(&item.reference);
        }
    }
    let html = render::to_html_showing(&lb, &runs, &shown)?;
    let csv = render::to_csv(&lb)?;
    std::fs::create_dir_all(out_dir).map_err(|source| ReportError::Io { path: out_dir.to_path_buf(), source })?;
    let paths = ReportPaths {
        dir: out_dir.to_path_buf(),
        html: out_dir.join("report.html"),
        json: out_dir.join("leaderboard.json"),
        markdown: out_dir.join("leaderboard.md"),
        csv: out_dir.join("leaderboard.csv"),
    };
    write_atomically(&paths.json, render::to_json(&lb).as_bytes())?;
    write_atomically(&paths.markdown, render::to_markdown(&lb).as_bytes())?;
    write_atomically(&paths.csv, csv.as_bytes())?;
    write_atomically(&paths.html, html.as_bytes())?;
    Ok(paths)
}

/// Refuses runs of different protocols (their scores are not comparable) unless `allow_mixed`,
/// naming the runs of each protocol and what differs from the first.
pub fn check_protocols(runs: &[RunRecord], allow_mixed: bool) -> Result<(), ReportError> {
    let groups = h2htalk_store::protocol::ProtocolGroups::of(runs.iter().map(|r| (r.run.id.as_str(), &r.run.spec)));
    if !groups.mixed() || allow_mixed {
        return Ok(());
    }
    Err(ReportError::Usage(format!(
        "these runs were made under {} different protocols, so their scores are not comparable: {}. Report each \
         protocol apart (--runs), or rank them together with --allow-mixed (every row is then marked with its protocol)",
        groups.groups.len(),
        groups.differences().join(". ")
    )))
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let io = |source| ReportError::Io { path: path.to_path_buf(), source };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// The assessments of one stored run (what `runs show` prints): its format checks, judge scores,
/// safety score, simulator results, tokens and cost.
pub fn assess_run(store: &Store, run_id: &str, bootstrap: &Bootstrap) -> Result<RunAssessment, ReportError> {
    let db = store.path().to_string();
    let runs = load_runs(store, &db, &[run_id.to_string()])?;
    let mut a = assessments::assess(store, &runs, bootstrap)?;
    Ok(a.runs.remove(0))
}

/// What `runs show` prints beyond the run's assessment tables: its protocol, its findings by tag,
/// and the SAP on − off safety difference against its counterpart.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunDetails {
    /// The protocol fingerprint (`protocol:sha256:...`).
    pub protocol: String,
    /// The tag breakdown and differences of this run.
    pub tags: Option<tags::TagReport>,
    /// The latest complete run of the same model with the other SAP mode and the same protocol;
    /// `None` when there is none.
    pub sap_counterpart: Option<String>,
    /// The safety score on − off against it, per judge both runs have (empty without a counterpart).
    pub sap_safety: Vec<assessments::SafetyOnOff>,
    /// When the run is one of several samples of its model and protocol (`--epochs`): the group's
    /// figures with the sampling noise ([`compute::epochs`]).
    pub samples: Option<compute::epochs::SampleGroup>,
    /// The same, in Markdown, with the leaderboard's tag tables.
    #[serde(skip)]
    pub markdown: String,
}

/// The details of `run_id` for `runs show` ([`RunDetails`]), computed with the report's code.
pub fn run_details(store: &Store, run_id: &str, bootstrap: &Bootstrap) -> Result<RunDetails, ReportError> {
    use std::fmt::Write;
    let db = store.path().to_string();
    let runs = load_runs(store, &db, &[run_id.to_string()])?;
    let spec = &runs[0].run.spec;
    let protocol = spec.protocol();
    let mut lb = build(&runs, bootstrap, None)?;
    lb.assessments = assessments::assess(store, &runs, bootstrap)?;
    let tag_data = load::tags::load(store, &runs)?;
    lb.tags = Some(tags::build(&lb, &runs, &tag_data, bootstrap));
    let mut md = String::new();
    let _ = writeln!(md, "protocol: {}\n", protocol.fingerprint());
    md.push_str(&render::tags::to_markdown(&lb));
    // The counterpart: same model, other SAP mode, same protocol, complete; the latest.
    let other = match spec.sap.mode.as_str() {
        "on" => "off",
        _ => "on",
    };
    let counterpart = store
        .runs()?
        .into_iter()
        .filter(|r| {
            r.id != run_id
                && r.spec.model_id == spec.model_id
                && r.spec.sap.mode.as_str() == other
                && matches!(
                    r.status,
                    h2htalk_store::RunStatus::Complete | h2htalk_store::RunStatus::CompleteWithFailures
                )
                && r.spec.protocol() == protocol
        })
        .max_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
    let pct = pct(bootstrap.confidence);
    let mut sap_safety = Vec::new();
    let _ = writeln!(md, "### SAP on against SAP off\n");
    match &counterpart {
        None => {
            let _ = writeln!(
                md,
                "not available: no complete run of {} with SAP {other} under the same protocol\n",
                spec.model_id
            );
        }
        Some(c) => {
            let pair = load_runs(store, &db, &[run_id.to_string(), c.id.clone()])?;
            let a = assessments::assess(store, &pair, bootstrap)?;
            match render::tables::sap_safety_table(&a, &pct) {
                Some(t) => md.push_str(&render::tables::table_markdown(&t)),
                None => {
                    let _ = writeln!(md, "counterpart {}: the safety score was not run on both runs\n", c.id);
                }
            }
            sap_safety = a.sap_safety;
        }
    }
    // The other samples of the run's model and protocol (`--epochs`).
    let siblings: Vec<String> = store
        .runs()?
        .into_iter()
        .filter(|r| {
            r.spec.model_id == spec.model_id && r.spec.sap.mode == spec.sap.mode && r.spec.protocol() == protocol
        })
        .map(|r| r.id)
        .collect();
    let mut samples = None;
    if siblings.len() >= 2 {
        let group = load_runs(store, &db, &siblings)?;
        let lb = build(&group, bootstrap, None)?;
        samples = lb.epochs.iter().find(|g| g.runs.iter().any(|r| r == run_id)).cloned();
        if samples.is_some() {
            md.push_str(&render::epochs_markdown(&lb, &pct));
        }
    }
    Ok(RunDetails {
        protocol: protocol.fingerprint(),
        tags: lb.tags,
        sap_counterpart: counterpart.map(|c| c.id),
        sap_safety,
        samples,
        markdown: md,
    })
}
