//! The local host: assembles the App over the local backend and starts the services the
//! process runs besides the API, each in its own module: the in-process reference engine, the
//! workflow runner (`workflow`), the render workers (`render_worker`), webhook delivery
//! (`webhook_delivery`), the retention sweep (`retention`) and the recovery and reconcile
//! passes (`recovery`). Only this module knows all of them; none of them knows it. Also the demo
//! organization created on first start.
//!
//! The order, as `reelgate serve` and the test server follow it: open the [`LocalBackend`],
//! build the [`LocalWorkflow`] on its journal, [`assemble`] the App with it, then
//! [`start_services`] on that App.

use crate::backend::LocalBackend;
use crate::journal::SqliteJournal;
use crate::workflow::LocalWorkflow;
use reelgate::adapters::CatalogConnector;
use reelgate::app::{App, Host, Ports};
use reelgate::config::Config;
use reelgate::ports::store::{item, Condition, ItemExt, Key};
use rust_decimal::Decimal;
use std::sync::Arc;
use std::time::Duration;

/// What the first start prints: where the service is and the key to call it with.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DemoAccount {
    pub org: String,
    pub user: String,
    pub api_key: Option<String>,
    pub created: bool,
}

pub const DEMO_CREDITS: &str = "25.00";

/// Creates the demo organization, person and API key once; later starts find it again (the
/// key's secret is shown only the first time).
pub async fn bootstrap_demo(app: &App) -> anyhow::Result<DemoAccount> {
    let marker = Key::new("LOCAL", "DEMO");
    if let Some(found) = app.store.get(&marker).await? {
        return Ok(DemoAccount {
            org: found.str_attr("org").unwrap_or_default().to_owned(),
            user: found.str_attr("user").unwrap_or_default().to_owned(),
            api_key: None,
            created: false,
        });
    }
    let accounts = app.accounts();
    let credits: Decimal = DEMO_CREDITS.parse()?;
    let org = accounts
        .create_org(
            "Demo",
            reelgate::domain::accounts::DEFAULT_PLAN,
            "usd",
            credits,
        )
        .await?;
    let user = accounts
        .create_person(&org.id, "demo@reelgate.local")
        .await?;
    let key = accounts.create_api_key(&user.id).await?;
    let mut m = item(&marker);
    m.insert("org".into(), org.id.clone().into());
    m.insert("user".into(), user.id.clone().into());
    app.store.put(m, Some(Condition::NotExists)).await?;
    Ok(DemoAccount {
        org: org.id,
        user: user.id,
        api_key: Some(key.secret),
        created: true,
    })
}

/// Where the local server mounts the in-process reference engine.
pub const REFERENCE_ENGINE_PREFIX: &str = "/_engine";

#[derive(Clone, Debug)]
pub struct LocalServiceOptions {
    /// Multiplies every wait of the state machine (tests shrink heartbeats and retries); read
    /// when the workflow is built ([`local_workflow`]).
    pub time_scale: f64,
    /// Render messages handled at once.
    pub render_workers: usize,
    /// How often expired jobs and files are swept (and ended executions reconciled).
    pub sweep_interval: Duration,
    /// How often the recovery pass looks for admitted jobs whose workflow never started.
    pub recovery_interval: Duration,
    /// How old such a job must be before the periodic pass ends it (a start takes far less).
    pub recovery_grace: Duration,
    /// Renders the in-process reference engine runs at once.
    pub engine_parallel: usize,
    /// Serve the reference engine's fault switches (`PUT /_engine/v1/faults`), for tests.
    pub engine_fault_injection: bool,
}

impl Default for LocalServiceOptions {
    fn default() -> Self {
        LocalServiceOptions {
            time_scale: 1.0,
            render_workers: 2,
            sweep_interval: Duration::from_secs(600),
            recovery_interval: Duration::from_secs(60),
            recovery_grace: Duration::from_secs(300),
            engine_parallel: 0,
            engine_fault_injection: false,
        }
    }
}

/// Everything the local process runs besides the API: the reference engine, the workflow
/// runner, the render workers, webhook delivery and the periodic passes. Dropping it stops
/// them, as [`LocalServices::shutdown`] does.
pub struct LocalServices {
    pub engine: Arc<reelgate_engine::ReferenceEngine>,
    pub workflow: Arc<LocalWorkflow>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl LocalServices {
    pub fn shutdown(&self) {
        self.workflow.runner.shutdown();
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Drop for LocalServices {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Where the local server serves its in-process reference engine.
pub fn reference_engine_url(public_base_url: &str) -> String {
    format!(
        "{}{REFERENCE_ENGINE_PREFIX}",
        public_base_url.trim_end_matches('/')
    )
}

/// The workflow runner over this backend's journal, for the App to be built with; it runs
/// nothing until [`start_services`].
pub fn local_workflow(
    backend: &LocalBackend,
    options: &LocalServiceOptions,
) -> anyhow::Result<Arc<LocalWorkflow>> {
    LocalWorkflow::new(SqliteJournal::new(backend.db.clone()), options.time_scale)
}

/// The application over this data directory with `workflow` as its runner, assembled from
/// `config` by [`reelgate::app::assemble`] like every host's; `connector` names the chat-upstream
/// kinds the binary links. A failing upstream or discovery stops start-up here.
pub async fn assemble(
    config: &Config,
    backend: &LocalBackend,
    workflow: Arc<LocalWorkflow>,
    public_base_url: &str,
    connector: CatalogConnector,
) -> anyhow::Result<App> {
    let ports = Ports {
        store: backend.store.clone(),
        blobs: backend.blobs.clone(),
        render_queue: backend.render_queue.clone(),
        workflow: Some(workflow),
    };
    let host = Host {
        fallback_url: public_base_url.to_owned(),
        defaults: reelgate::config::HostDefaults::LOCAL,
        in_process_engine_url: Some(reference_engine_url(public_base_url)),
        in_process_engine_key: Some(backend.engine_key.clone()),
        connector,
        catalog_engines: Some(reelgate::adapters::engines_from_catalog_with_key),
        moderator: Some(reelgate::adapters::moderator_from_config),
        extra_engines: None,
        strict_upstreams: true,
        connect_upstreams: true,
    };
    let mut app = reelgate::app::assemble(config, ports, host).await?;
    app.webhooks = Some(backend.webhook_queue.clone());
    Ok(app)
}

/// Starts the local services of `app`, whose workflow is `workflow`: the in-process reference
/// engine; the workflow's steps on `app`, resuming unfinished executions; the start-up
/// recovery; then the render workers, webhook delivery and the periodic passes. Call before
/// serving; mount the engine with [`local_router`].
pub async fn start_services(
    app: &App,
    backend: &LocalBackend,
    workflow: Arc<LocalWorkflow>,
    options: LocalServiceOptions,
) -> anyhow::Result<LocalServices> {
    anyhow::ensure!(
        app.workflow().is_some_and(|w| workflow.is(&w)),
        "the App must be built with the workflow its services start"
    );
    let engine = reelgate_engine::ReferenceEngine::new(reelgate_engine::EngineConfig {
        public_base_url: reference_engine_url(&app.settings.public_base_url),
        max_parallel: options.engine_parallel.max(1),
        fault_injection: options.engine_fault_injection,
        api_key: Some(backend.engine_key.clone()),
        ..Default::default()
    });
    workflow.run_steps_on(app.clone());
    let resumed = workflow.runner.resume_unfinished().await?;
    if resumed > 0 {
        tracing::info!(resumed, "resumed unfinished video executions");
    }
    crate::recovery::recover_at_start(app, workflow.as_ref()).await?;
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(crate::recovery::run(
        app.clone(),
        workflow.clone(),
        options.recovery_interval,
        options.recovery_grace,
    )));
    for n in 0..options.render_workers.max(1) {
        tasks.push(tokio::spawn(crate::render_worker::run(app.clone(), n)));
    }
    tasks.push(tokio::spawn(crate::webhook_delivery::run(app.clone())));
    tasks.push(tokio::spawn(sweeps(
        app.clone(),
        backend.clone(),
        options.sweep_interval,
    )));
    Ok(LocalServices {
        engine,
        workflow,
        tasks,
    })
}

/// Every `interval`, starting at once: the retention sweep, then the reconcile of ended
/// executions.
async fn sweeps(app: App, backend: LocalBackend, interval: Duration) {
    let journal = SqliteJournal::new(backend.db.clone());
    loop {
        let now = reelgate::ports::store::now_secs();
        if let Err(e) = crate::retention::sweep(&backend, now).await {
            tracing::warn!(error = %e, "retention sweep failed");
        }
        if let Err(e) = crate::recovery::reconcile(&app, &journal).await {
            tracing::warn!(error = %e, "reconciling ended executions failed");
        }
        tokio::time::sleep(interval).await;
    }
}

/// The local server's router: the API plus the in-process reference engine.
pub fn local_router(app: App, backend: &LocalBackend, services: &LocalServices) -> axum::Router {
    backend
        .router(app)
        .nest_service(REFERENCE_ENGINE_PREFIX, services.engine.clone().router())
}
