//! `reelgate engine serve`: the reference video engine as its own process, speaking the HTTP
//! engine protocol (docs/engine-protocol.md) — for deployments and tests that want the engine
//! apart from the API.

use anyhow::Context;

#[derive(clap::Args)]
pub struct EngineArgs {
    #[command(subcommand)]
    command: EngineCommand,
}

#[derive(clap::Subcommand)]
enum EngineCommand {
    /// Serve the reference engine.
    Serve {
        #[arg(long, default_value = "127.0.0.1:8790", env = "REELGATE_ENGINE_ADDR")]
        addr: std::net::SocketAddr,
        /// The URL callers reach the engine at (result URLs are built from it).
        #[arg(long, env = "REELGATE_ENGINE_PUBLIC_URL")]
        public_url: Option<String>,
        /// Renders at once; more wait queued.
        #[arg(long, default_value_t = 1, env = "REELGATE_ENGINE_PARALLEL")]
        parallel: usize,
        /// Name of the environment variable holding the bearer key callers must send.
        #[arg(long, env = "REELGATE_ENGINE_API_KEY_ENV")]
        api_key_env: Option<String>,
        /// Serve PUT /v1/faults (fail, hang, drop_connection, bad_output) for tests.
        #[arg(long)]
        fault_injection: bool,
    },
}

pub async fn run(args: EngineArgs) -> anyhow::Result<()> {
    match args.command {
        EngineCommand::Serve {
            addr,
            public_url,
            parallel,
            api_key_env,
            fault_injection,
        } => {
            let api_key = match api_key_env {
                Some(name) => {
                    Some(std::env::var(&name).with_context(|| format!("{name} is not set"))?)
                }
                None => None,
            };
            let config = reelgate_engine::EngineConfig {
                public_base_url: public_url.unwrap_or_else(|| format!("http://{addr}")),
                api_key,
                max_parallel: parallel.max(1),
                fault_injection,
                ..Default::default()
            };
            println!(
                "reelgate reference engine serving at {}",
                config.public_base_url
            );
            reelgate_engine::serve(addr, config)
                .await
                .context("serving the engine")
        }
    }
}
