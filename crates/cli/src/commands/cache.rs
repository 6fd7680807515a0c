//! `h2htalk cache stats`: what the answer cache of a store holds, and how runs used it.

use clap::{Args, Subcommand};
use h2htalk_store::{CacheUse, Store};

use super::args::DbArg;

#[derive(Subcommand)]
pub enum CacheCommand {
    /// The answers kept per model, and each run's or comparison's hits and misses.
    Stats(StatsArgs),
}

#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    store: DbArg,
    /// One JSON object instead of the tables.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: CacheCommand) -> anyhow::Result<()> {
    let CacheCommand::Stats(args) = cmd;
    let store = Store::open_read_only(&args.store.db)?;
    let stats = store.cache_stats()?;
    let uses = store.cache_uses(None)?;
    if args.json {
        println!("{}", serde_json::json!({"models": stats, "uses": uses}));
        return Ok(());
    }
    println!("answer cache of {}", args.store.db.display());
    if stats.is_empty() {
        println!("  no answers kept yet");
    }
    for s in &stats {
        println!("  {:<60} {:>8} answers {:>10.1} k characters", s.model, s.entries, s.answer_chars as f64 / 1e3);
    }
    if !uses.is_empty() {
        println!("{:<40} {:<50} {:>8} {:>8}", "run or comparison", "model", "hits", "misses");
        for u in &uses {
            println!("{:<40} {:<50} {:>8} {:>8}", u.scope, u.model, u.hits, u.misses);
        }
    }
    Ok(())
}

/// The line a run prints about its use of the answer cache (`None`: it did not use it).
pub fn use_line(uses: &[CacheUse]) -> Option<String> {
    let (hits, misses) = uses.iter().fold((0, 0), |(h, m), u| (h + u.hits, m + u.misses));
    (hits + misses > 0).then(|| {
        format!(
            "answer cache: {hits} of {} calls answered from it without a request (`h2htalk cache stats`; --cache off \
             turns it off)",
            hits + misses
        )
    })
}
