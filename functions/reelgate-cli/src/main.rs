//! `reelgate`: the local server, the admin command and the reference engine. Thin: every piece
//! of behaviour lives in the `reelgate` library.

mod admin;
mod aws;
mod engine;
mod serve;

use clap::{Parser, Subcommand};
use reelgate::config::Config;
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

/// Where the local data lives unless `--data-dir` (`REELGATE_DATA_DIR`) says otherwise.
pub fn default_data_dir() -> PathBuf {
    PathBuf::from(".reelgate")
}

fn init_logging(config: &Config) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = match &config.log_filter {
        Some(filter) => EnvFilter::try_new(filter)
            .map_err(|e| anyhow::anyhow!("REELGATE_LOG: '{filter}' is not a log filter: {e}"))?,
        None => EnvFilter::new("info,tower_http=info,hyper=warn"),
    };
    let Some(export) = &config.traces else {
        // No OTLP endpoint: the plain log subscriber, no trace layer at all.
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr);
        if config.log_json {
            builder.json().init();
        } else {
            builder.init();
        }
        return Ok(());
    };
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    // The log keeps its own filter; spans go to the exporter whatever REELGATE_LOG says.
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs = if config.log_json {
        logs.json().with_filter(filter).boxed()
    } else {
        logs.with_filter(filter).boxed()
    };
    tracing_subscriber::registry()
        .with(logs)
        .with(reelgate::adapters::otel::layer(export)?)
        .init();
    Ok(())
}

fn main() -> std::process::ExitCode {
    // The PDF renderer's child process (reelgate_embedded::pdf_child), hidden from --help: it
    // runs before the runtime, the configuration and the logger, so its limited address space
    // holds nothing but the document.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            reelgate_embedded::pdf_child::SUBCOMMAND,
        ))
    {
        return reelgate_embedded::pdf_child::child_main();
    }
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("reelgate: starting the runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> std::process::ExitCode {
    // The environment is read once, here; a malformed or unknown REELGATE_* variable stops
    // every subcommand before it does anything.
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("reelgate: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Err(e) = init_logging(&config) {
        eprintln!("reelgate: {e}");
        return std::process::ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => serve::run(args, &config).await,
        Command::Admin(args) => admin::run(args, &config).await,
        Command::Engine(args) => engine::run(args).await,
    };
    // The last batch of spans leaves before the process does.
    reelgate::adapters::otel::shutdown().await;
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reelgate: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
