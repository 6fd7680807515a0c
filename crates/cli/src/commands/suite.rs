//! `h2htalk suite check`: validate a scenario suite and show what it covers.

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Subcommand};
use h2htalk_data::load_suite;
use h2htalk_data::suite::embedded;

#[derive(Subcommand)]
pub enum SuiteCommand {
    /// Validate a suite (default: the suite embedded in this binary) and print per-task counts, tag
    /// coverage and a fingerprint.
    Check(CheckArgs),
    /// Write the suite embedded in this binary into a directory, to edit it and run it with --suite.
    Export(ExportArgs),
}

#[derive(Args)]
pub struct CheckArgs {
    /// The suite directory (holding scenarios/, safety/, personas/); default: the embedded suite.
    #[arg(conflicts_with = "suite")]
    dir: Option<PathBuf>,
    /// The same, as an option.
    #[arg(long)]
    suite: Option<PathBuf>,
    /// The official data directory, for a suite of official lines (`suites/official`); default:
    /// $H2HTALK_REFERENCES, else the first shared/h2htalk-data found going up from the suite.
    #[arg(long)]
    references: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Where to write it (created; files of the same names are replaced).
    dir: PathBuf,
}

pub fn run(cmd: SuiteCommand) -> anyhow::Result<()> {
    match cmd {
        SuiteCommand::Check(args) => {
            let audit = h2htalk_audit::audit(args.dir.or(args.suite).as_deref(), args.references.as_deref())?;
            print!("{}", audit.text);
            if let Some(first) = audit.failures.first() {
                bail!("{first}");
            }
        }
        SuiteCommand::Export(args) => {
            let n = embedded::write_to(&args.dir)?;
            let suite = load_suite(&args.dir)?;
            println!(
                "wrote the embedded suite ({n} files, {} scenarios, fingerprint {}) to {}; run it with --suite {}",
                suite.scenarios.len(),
                suite.fingerprint(),
                args.dir.display(),
                args.dir.display()
            );
        }
    }
    Ok(())
}
