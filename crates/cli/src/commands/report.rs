//! `h2htalk report`: Markdown, CSV and JSON leaderboards and one self-contained HTML report of
//! stored runs.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use h2htalk_report::Bootstrap;
use h2htalk_report::bootstrap::{DEFAULT_RESAMPLES, DEFAULT_SEED};
use h2htalk_report::{Options, write_report_with};
use h2htalk_store::Store;

#[derive(Args)]
pub struct ReportArgs {
    /// The run store.
    #[arg(long, default_value = "runs/h2htalk.db")]
    db: PathBuf,
    /// Runs to report, comma-separated (default: every run in the store).
    #[arg(long, value_delimiter = ',')]
    runs: Vec<String>,
    /// Output directory: leaderboard.md, leaderboard.csv, leaderboard.json, report.html.
    #[arg(long)]
    out: PathBuf,
    /// The metric to rank and compare runs by (default: the first of composite, bertscore,
    /// embedding, rougeL, then any other, that every run has).
    #[arg(long)]
    rank_by: Option<String>,
    /// Bootstrap resamples per interval (at least 1000).
    #[arg(long, default_value_t = DEFAULT_RESAMPLES)]
    resamples: usize,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// The runs of this sweep (`h2htalk sweep --name NAME`), in its model order.
    #[arg(long, value_name = "NAME", conflicts_with = "runs")]
    sweep: Option<String>,
    /// Rank runs of different protocols together, each row marked with its protocol (otherwise such
    /// a report is refused, naming what differs).
    #[arg(long)]
    allow_mixed: bool,
    /// Mask phone numbers, e-mail addresses, identity and bank card numbers in the transcripts.
    #[arg(long)]
    redact: bool,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    if args.resamples < DEFAULT_RESAMPLES {
        bail!("--resamples {}: use at least {DEFAULT_RESAMPLES} for 95% intervals", args.resamples);
    }
    let store = Store::open_read_only(&args.db)?;
    let options = Options {
        bootstrap: Bootstrap { resamples: args.resamples, seed: args.seed, ..Bootstrap::default() },
        rank_metric: args.rank_by,
        redact: args.redact,
        allow_mixed: args.allow_mixed,
    };
    let runs: Vec<String> = match &args.sweep {
        Some(name) => {
            let sweep = store.sweep(name)?.ok_or_else(|| {
                anyhow::anyhow!("{}: no sweep `{name}`; `h2htalk runs list` shows the sweeps", args.db.display())
            })?;
            sweep.runs.into_iter().filter_map(|m| m.run_id).collect()
        }
        None => args.runs.into_iter().filter(|r| !r.trim().is_empty()).collect(),
    };
    let paths = write_report_with(&store, &runs, &args.out, &options)?;
    println!("wrote {}", paths.markdown.display());
    println!("wrote {}", paths.csv.display());
    println!("wrote {}", paths.json.display());
    println!("report: {}", paths.html.display());
    Ok(())
}
