//! `reelgate`: the local server, the admin command and the reference engine. Thin: every piece
//! of behaviour lives in the `reelgate` library.

mod admin;
mod aws;
mod engine;
mod serve;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "reelgate",
    version,
    about = "Video generation and text-model API service"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the whole service as one local process on the embedded store.
    Serve(serve::ServeArgs),
    /// Manage organizations, users, keys, credits and plans (JSON on stdout).
    Admin(admin::AdminArgs),
    /// The reference video engine.
    Engine(engine::EngineArgs),
}

/// Where the local data lives unless `--data-dir` says otherwise.
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("REELGATE_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(".reelgate"))
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("REELGATE_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,tower_http=info,hyper=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if std::env::var("REELGATE_LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    init_logging();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Admin(args) => admin::run(args).await,
        Command::Engine(args) => engine::run(args).await,
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reelgate: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
