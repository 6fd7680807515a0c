//! `h2htalk suite check`: validate a scenario suite and show what it covers.

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Subcommand};
use h2htalk_data::suite::embedded;
use h2htalk_data::{load_suite, load_suite_with};
use h2htalk_runner::check::{check_official, coverage, suite_statistics};

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
            let dir = embedded::or_embedded(args.dir.or(args.suite).as_deref())?;
            let suite = load_suite_with(&dir, args.references.as_deref())?;
            // The other data of a suite: templates and SAP, the judge's texts and rules, the profiles.
            let prompts = h2htalk_prompt::Prompts::load(&dir)?;
            let texts = h2htalk_judge::JudgeTexts::load(&dir)?;
            print!("{}", coverage(&suite));
            println!("templates {}  sap {} {}", prompts.template_hash(), prompts.sap().version, prompts.sap().hash());
            println!("judge texts and safety rules {}", texts.hash());
            let references = args
                .references
                .clone()
                .or_else(|| h2htalk_data::suite::default_references(&dir))
                .or_else(|| std::env::current_dir().ok().and_then(|d| h2htalk_data::suite::default_references(&d)));
            print!("{}", suite_statistics(&suite, references.as_deref())?);
            // Profiles belong to the suite's own personas: never inherited.
            if dir.join("simulator").is_dir() {
                let profiles = h2htalk_judge::load_profiles(&dir.join("simulator"), &suite)?;
                let mut cells: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
                for p in &profiles {
                    let style = serde_json::to_value(p.attachment)?.as_str().unwrap_or_default().to_string();
                    *cells.entry(format!("{style} {} {}", p.lang, p.companion_persona)).or_default() += 1;
                }
                let cells: Vec<String> = cells.into_iter().map(|(k, n)| format!("{k}: {n}")).collect();
                println!("simulator profiles {} (per attachment style, language, persona: {})", profiles.len(), cells.join("; "));
            } else {
                println!("simulator profiles: none (this suite has no simulator/; --simulate needs a suite that has)");
            }
            // A suite of official lines: counts, reference breaks and give-away against our suite.
            if suite.official.is_some() {
                let baseline = load_suite(&embedded::dir()?)?;
                let official = check_official(&suite, &baseline).expect("a suite with official lines");
                print!("{official}");
                if !official.passed() {
                    bail!("{}: the official set does not pass its checks (see above)", dir.display());
                }
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

