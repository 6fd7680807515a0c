//! `h2htalk view`: serve a run store to the browser ([`h2htalk_view`]).

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Args;

use super::args::DbArg;

#[derive(Args)]
pub struct ViewArgs {
    #[command(flatten)]
    store: DbArg,
    /// The port (0: any free one).
    #[arg(long, default_value_t = 8765)]
    port: u16,
    /// The address to listen on. Anything but the loopback interface makes every request need the
    /// token the viewer prints.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// The viewer's index (derived, rebuildable; the store itself is only read).
    #[arg(long, value_name = "FILE", help = "The viewer's index file [default: <db>.view]")]
    index: Option<PathBuf>,
    /// Open the rating pages of this annotation set (made by `h2htalk annotate export`): people rate
    /// its blinded items in the browser, each rating stored at once.
    #[arg(long, value_name = "NAME")]
    annotate: Option<String>,
}

pub fn run(args: ViewArgs) -> anyhow::Result<()> {
    let options = h2htalk_view::ViewOptions {
        db: args.store.db,
        index: args.index,
        bind: args.bind,
        port: args.port,
        require_token: false,
        annotate: args.annotate,
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let server = h2htalk_view::prepare(&options, |m| eprintln!("view: {m}")).await?;
        println!("h2htalk view: {}", server.url());
        if server.token.is_some() {
            eprintln!("view: listening beyond this machine; every request needs the token in that URL");
        }
        eprintln!("view: Ctrl-C stops it");
        server.serve().await?;
        anyhow::Ok(())
    })
}
