//! `h2htalk data check`: validate a directory in the official layout.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use h2htalk_data::{load_predictions, load_references};

#[derive(Subcommand)]
pub enum DataCommand {
    /// Validate a reference directory (or, with --references, a prediction directory against it)
    /// and print per-file counts and a fingerprint of the whole set.
    Check(CheckArgs),
}

#[derive(Args)]
pub struct CheckArgs {
    /// The directory to check.
    dir: PathBuf,
    /// Check DIR as predictions matched to this reference directory.
    #[arg(long)]
    references: Option<PathBuf>,
}

pub fn run(cmd: DataCommand) -> anyhow::Result<()> {
    let DataCommand::Check(args) = cmd;
    let (set, kind) = match &args.references {
        None => (load_references(&args.dir)?, "references"),
        Some(refs) => {
            let refs = load_references(refs).context("loading the references to match against")?;
            (load_predictions(&args.dir, &refs)?, "predictions")
        }
    };
    println!("{} ({kind}): ok", args.dir.display());
    println!("{:<30} {:>7}  sha256 (file as stored)", "file", "items");
    for f in set.files.values() {
        println!("{:<30} {:>7}  {}", format!("{}.jsonl", f.task.stem()), f.texts.len(), f.sha256);
    }
    println!("{:<30} {:>7}", "total", set.len());
    println!("fingerprint {}", set.fingerprint());
    Ok(())
}
