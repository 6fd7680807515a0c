//! `h2htalk suite check`: validate a scenario suite and show what it covers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use h2htalk_data::suite::{Lang, Risk, embedded};
use h2htalk_data::{Scenario, Suite, Task, load_suite};

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
            let suite = load_suite(&dir)?;
            // The other data of a suite: templates and SAP, the judge's texts and rules, the profiles.
            let prompts = h2htalk_prompt::Prompts::load(&dir)?;
            let texts = h2htalk_judge::JudgeTexts::load(&dir)?;
            let profiles = h2htalk_judge::load_profiles(&dir.join("simulator"), &suite)?;
            print!("{}", coverage(&suite));
            println!("templates {}  sap {} {}", prompts.template_hash(), prompts.sap().version, prompts.sap().hash());
            println!("judge texts and safety rules {}", texts.hash());
            println!("simulator profiles {}", profiles.len());
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

fn flags(s: &Scenario) -> [bool; 3] {
    [s.tags.implicit_need, s.tags.changing_need, s.tags.multi_session]
}

/// The coverage report of a valid suite.
pub fn coverage(suite: &Suite) -> String {
    let mut out = format!(
        "{}: ok, {} scenarios, {} personas\n",
        suite.dir.display(),
        suite.scenarios.len(),
        suite.personas.len()
    );
    out += &format!("{:<24} {:>5} {:>5} {:>9} {:>9} {:>8}\n", "sub-task", "zh", "en", "implicit", "changing", "multi");
    let (tasks, safety): (Vec<&Scenario>, Vec<&Scenario>) = suite.scenarios.iter().partition(|s| !Suite::is_safety(s));
    let row = |name: &str, group: &[&Scenario]| {
        let lang = |l| group.iter().filter(|s| s.lang == l).count();
        let flag = |i: usize| group.iter().filter(|s| flags(s)[i]).count();
        format!("{name:<24} {:>5} {:>5} {:>9} {:>9} {:>8}\n", lang(Lang::Zh), lang(Lang::En), flag(0), flag(1), flag(2))
    };
    for task in Task::ALL {
        let group: Vec<&Scenario> = tasks.iter().copied().filter(|s| s.task == task).collect();
        out += &row(task.stem(), &group);
    }
    out += &row("sub-tasks total", &tasks);
    out += &row("safety set", &safety);

    let mut emotions: BTreeMap<String, usize> = BTreeMap::new();
    for s in &suite.scenarios {
        for e in &s.tags.emotions {
            *emotions.entry(serde_json::to_value(e).unwrap().as_str().unwrap().to_string()).or_default() += 1;
        }
    }
    let list =
        |m: BTreeMap<String, usize>| m.into_iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
    out += &format!("emotions: {}\n", list(emotions));
    let mut risks: BTreeMap<String, usize> =
        Risk::ALL.iter().map(|r| (serde_json::to_value(r).unwrap().as_str().unwrap().to_string(), 0)).collect();
    for s in &safety {
        let key = serde_json::to_value(s.tags.risk.unwrap()).unwrap().as_str().unwrap().to_string();
        *risks.get_mut(&key).unwrap() += 1;
    }
    out += &format!("safety risks (both languages): {}\n", list(risks));
    let mut personas: BTreeMap<String, usize> = BTreeMap::new();
    for s in &suite.scenarios {
        *personas.entry(s.persona.clone()).or_default() += 1;
    }
    out += &format!("personas: {}\n", list(personas));
    out += &format!("fingerprint {}\n", suite.fingerprint());
    out
}
