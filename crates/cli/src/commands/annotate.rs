//! `h2htalk annotate`: judges checked against people. `export` writes a blinded set of items,
//! `import` stores people's ratings of it, `agreement` shows how the judges agree with them.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use h2htalk_runner::annotate::{ExportOptions, export, import};
use h2htalk_store::{AnnotationKind, Store};

use super::args::DbArg;

#[derive(Subcommand)]
pub enum AnnotateCommand {
    /// Write a blinded set of items for people to rate on the judge's rubric (one answer) or
    /// pairwise (two runs' answers, in a random order kept in the store), as JSON Lines and CSV.
    Export(ExportArgs),
    /// Store people's ratings of a set (the exported .jsonl or .csv, filled in); every row is
    /// checked before any is stored.
    Import(ImportArgs),
    /// How each judge agrees with the people who rated a set, beside how they agree with one another.
    Agreement(AgreementArgs),
}

fn parse_kind(s: &str) -> Result<AnnotationKind, String> {
    AnnotationKind::parse(s).ok_or_else(|| format!("`{s}`: expected `rubric` or `pairwise`"))
}

#[derive(Args)]
pub struct ExportArgs {
    /// The set's name (its items are NAME-0001, ...; the files NAME.jsonl and NAME.csv).
    #[arg(long)]
    name: String,
    /// `rubric` (each answer scored 1–10 on the judge's criteria) or `pairwise` (which of two is better).
    #[arg(long, value_parser = parse_kind, default_value = "rubric")]
    kind: AnnotationKind,
    /// A run whose answers are rated (pairwise: exactly two).
    #[arg(long = "run", value_name = "RUN_ID", required = true)]
    runs: Vec<String>,
    /// At most this many scenarios (the same ones for every run), drawn with --seed.
    #[arg(long)]
    limit: Option<usize>,
    /// The seed of the draw, the items' order and the pairwise positions.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where the files go (default: `annotations/` beside the store).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    store: DbArg,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The ratings: the set's .jsonl (`scores` or `winner` filled in) or .csv (`score` or `winner`).
    file: PathBuf,
    /// The set they rate.
    #[arg(long)]
    set: String,
    /// Who rated (a `rater` field or column names the rater of its row instead).
    #[arg(long)]
    rater: Option<String>,
    #[command(flatten)]
    store: DbArg,
    /// One JSON object instead of the summary.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct AgreementArgs {
    /// The set.
    #[arg(long)]
    set: String,
    #[command(flatten)]
    store: DbArg,
    /// One JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: AnnotateCommand) -> anyhow::Result<()> {
    match cmd {
        AnnotateCommand::Export(a) => {
            if !a.store.db.is_file() {
                anyhow::bail!("{}: no run store here; give the store of the runs with --db FILE", a.store.db.display());
            }
            let mut store = Store::open(&a.store.db)?;
            let out = a
                .out
                .clone()
                .unwrap_or_else(|| a.store.db.parent().unwrap_or(std::path::Path::new(".")).join("annotations"));
            let options = ExportOptions { name: a.name, kind: a.kind, runs: a.runs, limit: a.limit, seed: a.seed, out };
            let e = export(&mut store, &options)?;
            println!(
                "set {} ({}): {} item(s) over {} scenario(s), blinded; rate them in {} or {}, then \
                 `h2htalk annotate import FILE --set {} --rater ID`",
                e.name,
                e.kind.as_str(),
                e.items,
                e.scenarios,
                e.jsonl.display(),
                e.csv.display(),
                e.name
            );
        }
        AnnotateCommand::Import(a) => {
            let mut store = Store::open(&a.store.db)?;
            let i = import(&mut store, &a.set, &a.file, a.rater.as_deref())?;
            if a.json {
                println!("{}", serde_json::to_string(&i)?);
            } else {
                println!(
                    "set {}: {} rating(s) by {} stored ({} replaced earlier ones; {} left empty, not rated)",
                    i.set,
                    i.ratings,
                    i.raters.join(", "),
                    i.replaced,
                    i.left_empty
                );
            }
        }
        AnnotateCommand::Agreement(a) => {
            let store = Store::open_read_only(&a.store.db)?;
            let set = store.annotation_set(&a.set)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: no annotation set `{}`; `h2htalk annotate export` makes one",
                    a.store.db.display(),
                    a.set
                )
            })?;
            let cfg = h2htalk_report::Bootstrap::default();
            match h2htalk_report::compute::human::agreement_of(&store, &set, &cfg)? {
                None => {
                    anyhow::bail!("set {}: nobody has rated it yet; `h2htalk annotate import` stores ratings", a.set)
                }
                Some(h) if a.json => println!("{}", serde_json::to_string(&h)?),
                Some(h) => print!(
                    "{}",
                    h2htalk_report::render::tables::table_markdown(&h2htalk_report::render::human::human_table(
                        &h,
                        &h2htalk_report::pct(cfg.confidence)
                    ))
                ),
            }
        }
    }
    Ok(())
}
