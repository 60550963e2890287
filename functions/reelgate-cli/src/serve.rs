use anyhow::Context;
use reelgate::config::Config;
use reelgate_embedded::backend::LocalBackend;
use reelgate_embedded::host::{
    assemble, bootstrap_demo, local_router, local_workflow, start_services, LocalServiceOptions,
};
use reelgate_embedded::listener::ListenerLimits;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", env = "REELGATE_ADDR")]
    addr: String,
    /// Directory holding the SQLite file and the blobs (default ./.reelgate).
    #[arg(long, env = "REELGATE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// The URL clients use to reach this server (default http://<addr>).
    #[arg(long, env = "REELGATE_PUBLIC_URL")]
    public_url: Option<String>,
    /// Renders the in-process reference engine runs at once.
    #[arg(long, default_value_t = 1, env = "REELGATE_ENGINE_PARALLEL")]
    engine_parallel: usize,
    /// Serve the reference engine's fault switches at /_engine/v1/faults (for tests).
    #[arg(long, env = "REELGATE_ENGINE_FAULT_INJECTION")]
    engine_fault_injection: bool,
    /// Open connections at once; one more is closed at once.
    #[arg(long, default_value_t = ListenerLimits::default().max_connections, env = "REELGATE_MAX_CONNECTIONS")]
    max_connections: usize,
    /// Requests in flight at once; past it a request is answered 503 with Retry-After.
    #[arg(long, default_value_t = ListenerLimits::default().max_in_flight, env = "REELGATE_MAX_IN_FLIGHT")]
    max_in_flight: usize,
    /// Shed requests while the runtime runs this many milliseconds behind (0: never on lag).
    #[arg(long, default_value_t = ListenerLimits::default().shed_lag.as_millis() as u64, env = "REELGATE_SHED_LAG_MS")]
    shed_lag_ms: u64,
    /// Requests in flight a server lagging just past the threshold admits (fewer as it lags more).
    #[arg(long, default_value_t = ListenerLimits::default().shed_floor, env = "REELGATE_SHED_FLOOR")]
    shed_floor: usize,
    /// Seconds a connection has to send a request's headers (idle keep-alive included).
    #[arg(long, default_value_t = ListenerLimits::default().header_read_timeout.as_secs(), env = "REELGATE_HEADER_TIMEOUT_SECS")]
    header_timeout_secs: u64,
    /// Seconds one write of an answer may wait for the client to read before the connection
    /// closes.
    #[arg(long, default_value_t = ListenerLimits::default().write_timeout.as_secs(), env = "REELGATE_WRITE_TIMEOUT_SECS")]
    write_timeout_secs: u64,
    /// Seconds a PDF waits for a free renderer (organizations are served in turn) before it is
    /// answered 503 `pdf_renderer_busy`.
    #[arg(long, default_value_t = reelgate_embedded::pdf_child::DEFAULT_WAIT_SECS, env = "REELGATE_PDF_WAIT_SECS")]
    pdf_wait_secs: u64,
    /// Bytes a second a request body must average after its first 10 s (0: no minimum).
    #[arg(long, default_value_t = ListenerLimits::default().min_body_rate, env = "REELGATE_MIN_BODY_RATE")]
    min_body_rate: u64,
}

pub async fn run(args: ServeArgs, config: &Config) -> anyhow::Result<()> {
    return_large_buffers_to_the_os();
    let data_dir = args.data_dir.unwrap_or_else(crate::default_data_dir);
    let listener = tokio::net::TcpListener::bind(&args.addr)
        .await
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let bound = listener.local_addr()?;
    // `--public-url` and REELGATE_PUBLIC_URL are one setting (clap reads the variable).
    let base_url = args
        .public_url
        .or_else(|| config.public_url.clone())
        .unwrap_or_else(|| format!("http://{bound}"))
        .trim_end_matches('/')
        .to_owned();
    let backend = LocalBackend::open(&data_dir, &base_url)
        .with_context(|| format!("opening the data directory {}", data_dir.display()))?;
    let options = LocalServiceOptions {
        engine_parallel: args.engine_parallel,
        engine_fault_injection: args.engine_fault_injection,
        ..Default::default()
    };
    let workflow = local_workflow(&backend, &options).context("loading the workflow")?;
    let mut app = assemble(
        config,
        &backend,
        workflow.clone(),
        &base_url,
        reelgate_aws::upstream_connector(),
    )
    .await?;
    // PDFs are rendered by this binary re-run as a limited child process, never in this one.
    app.pdf = Arc::new(
        reelgate_embedded::pdf_child::ChildRasterizer::this_executable()
            .context("finding this executable for the PDF renderer")?
            .with_wait(std::time::Duration::from_secs(args.pdf_wait_secs)),
    );
    let demo = bootstrap_demo(&app)
        .await
        .context("creating the demo organization")?;
    let services = start_services(&app, &backend, workflow, options)
        .await
        .context("starting the local services")?;
    let router = local_router(app.clone(), &backend, &services);

    println!("reelgate is serving at {base_url}");
    println!("  data directory: {}", data_dir.display());
    println!("  demo organization: {} (user {})", demo.org, demo.user);
    match &demo.api_key {
        Some(key) => {
            println!("  demo API key (shown once, keep it): {key}");
            println!("  try: curl -H 'Authorization: Bearer {key}' {base_url}/v1/videos/models");
        }
        None => println!(
            "  the demo API key was printed at first start; make another with: reelgate admin key create --user {}",
            demo.user
        ),
    }
    let link = reelgate::domain::accounts::console::Console::new(app.store.as_ref())
        .create_link(
            &demo.user,
            &demo.org,
            app.settings.console_link_ttl.as_secs() as i64,
        )
        .await
        .context("making the console sign-in link")?;
    println!(
        "  console sign-in link (works once, for {} min): {}",
        app.settings.console_link_ttl.as_secs().div_ceil(60),
        link.url(&base_url)
    );
    println!(
        "  another link: reelgate admin console-link --user {} --org {}",
        demo.user, demo.org
    );
    let limits = ListenerLimits {
        max_connections: args.max_connections.max(1),
        max_in_flight: args.max_in_flight.max(1),
        shed_lag: std::time::Duration::from_millis(args.shed_lag_ms),
        shed_floor: args.shed_floor,
        header_read_timeout: std::time::Duration::from_secs(args.header_timeout_secs.max(1)),
        write_timeout: std::time::Duration::from_secs(args.write_timeout_secs.max(1)),
        min_body_rate: args.min_body_rate,
        ..ListenerLimits::default()
    };
    tracing::info!(%base_url, ?limits, "ready");
    reelgate_embedded::listener::serve(listener, router, limits, shutdown_signal())
        .await
        .context("serving")?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// Buffers of 1 MiB and more are mapped and unmapped on their own (glibc's threshold pinned,
/// so it stops growing after a large free). Without this a 30 MiB JSON body, once freed, stays
/// in the arena of whichever worker thread parsed it, and a few such bodies on different
/// threads add up past the memory bound of docs/security.md.
fn return_large_buffers_to_the_os() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is thread-safe in glibc.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1024 * 1024);
    }
}
