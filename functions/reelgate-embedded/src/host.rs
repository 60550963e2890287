//! The local host's wiring: the embedded adapters under one data directory (a SQLite file and a
//! blob directory), and the demo organization created on first start.

use crate::blobs::{LocalBlobStore, UrlSigner};
use crate::db::Database;
use crate::queue::SqliteQueue;
use crate::store::SqliteItemStore;
use reelgate::adapters::CatalogConnector;
use reelgate::app::{App, Host, Ports};
use reelgate::config::{Config, Settings};
use reelgate::domain::catalog::Catalog;
use reelgate::ports::store::{item, Condition, ItemExt, Key};
use rust_decimal::Decimal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Receives before a render message goes to the dead-letter side.
pub const RENDER_QUEUE_MAX_RECEIVES: u32 = 5;
/// Receives before a webhook message goes to the dead-letter side (a failed attempt is a new
/// message; only a store or queue fault makes one come back).
pub const WEBHOOK_QUEUE_MAX_RECEIVES: u32 = 10;

#[derive(Clone)]
pub struct LocalBackend {
    pub db: Database,
    pub store: Arc<SqliteItemStore>,
    pub blobs: Arc<LocalBlobStore>,
    pub render_queue: Arc<SqliteQueue>,
    /// Webhook deliveries (`reelgate::domain::webhooks`), consumed by the workflow host.
    pub webhook_queue: Arc<SqliteQueue>,
    pub data_dir: PathBuf,
    /// The bearer key of the in-process reference engine, new each process: the engine is
    /// mounted on the public listener, and without this key it answers 401 to everyone.
    pub engine_key: String,
}

impl LocalBackend {
    pub fn open(data_dir: &Path, public_base_url: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(data_dir)?;
        let db = Database::open(&data_dir.join("reelgate.sqlite3"))?;
        let secret = UrlSigner::load_or_create_secret(&data_dir.join("url-signing.key"))?;
        let signer = UrlSigner::new(secret, public_base_url);
        Ok(LocalBackend {
            store: Arc::new(SqliteItemStore::new(db.clone())),
            blobs: Arc::new(LocalBlobStore::new(data_dir.join("blobs"), signer)),
            render_queue: Arc::new(SqliteQueue::new(
                db.clone(),
                "render",
                RENDER_QUEUE_MAX_RECEIVES,
            )),
            webhook_queue: Arc::new(SqliteQueue::new(
                db.clone(),
                "webhooks",
                WEBHOOK_QUEUE_MAX_RECEIVES,
            )),
            db,
            data_dir: data_dir.to_owned(),
            engine_key: reelgate::domain::ids::new_secret(40),
        })
    }

    pub fn app(&self, catalog: Arc<Catalog>, settings: Settings) -> App {
        let mut app = App::new(
            self.store.clone(),
            self.blobs.clone(),
            self.render_queue.clone(),
            catalog,
            settings,
        );
        app.webhook_queue = Some(self.webhook_queue.clone());
        app
    }
}

impl LocalBackend {
    /// The API router plus the route that serves this blob directory's signed URLs.
    pub fn router(&self, app: App) -> axum::Router {
        let signed = crate::blobs_route::SignedBlobs {
            blobs: self.blobs.clone(),
            signer: self.blobs.signer().clone(),
            max_upload_bytes: app.settings.max_upload_bytes,
        };
        reelgate::api::router(app).merge(crate::blobs_route::routes(signed))
    }
}

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

#[derive(Clone, Debug, Default)]
pub struct LocalServiceOptions {
    pub workflow: crate::workflow::LocalWorkflowOptions,
    /// Renders the in-process reference engine runs at once.
    pub engine_parallel: usize,
    /// Serve the reference engine's fault switches (`PUT /_engine/v1/faults`), for tests.
    pub engine_fault_injection: bool,
}

/// Everything the local process runs besides the API: the reference engine, the workflow
/// runner, the render workers and the sweeper.
pub struct LocalServices {
    pub engine: Arc<reelgate_engine::ReferenceEngine>,
    pub workflow: crate::workflow::LocalWorkflowHost,
}

/// Where the local server serves its in-process reference engine.
pub fn reference_engine_url(public_base_url: &str) -> String {
    format!(
        "{}{REFERENCE_ENGINE_PREFIX}",
        public_base_url.trim_end_matches('/')
    )
}

/// The application over this data directory, assembled from `config` by
/// [`reelgate::app::assemble`] like every host's; `connector` names the chat-upstream kinds the
/// binary links. A failing upstream or discovery stops start-up here.
pub async fn assemble(
    config: &Config,
    backend: &LocalBackend,
    public_base_url: &str,
    connector: CatalogConnector,
) -> anyhow::Result<App> {
    let ports = Ports {
        store: backend.store.clone(),
        blobs: backend.blobs.clone(),
        render_queue: backend.render_queue.clone(),
        workflow: None,
    };
    let host = Host {
        fallback_url: public_base_url.to_owned(),
        defaults: reelgate::config::HostDefaults::LOCAL,
        in_process_engine_url: Some(reference_engine_url(public_base_url)),
        in_process_engine_key: Some(backend.engine_key.clone()),
        connector,
        extra_engines: None,
        strict_upstreams: true,
        connect_upstreams: true,
    };
    let mut app = reelgate::app::assemble(config, ports, host).await?;
    app.webhook_queue = Some(backend.webhook_queue.clone());
    Ok(app)
}

/// Starts the local services of `app`: the in-process reference engine and the workflow host
/// (ASL runner, render workers, sweeper), which it installs as `app`'s workflow. Call before
/// serving; mount the engine with [`local_router`].
pub async fn start_services(
    app: &App,
    backend: &LocalBackend,
    options: LocalServiceOptions,
) -> anyhow::Result<LocalServices> {
    let engine = reelgate_engine::ReferenceEngine::new(reelgate_engine::EngineConfig {
        public_base_url: reference_engine_url(&app.settings.public_base_url),
        max_parallel: options.engine_parallel.max(1),
        fault_injection: options.engine_fault_injection,
        api_key: Some(backend.engine_key.clone()),
        ..Default::default()
    });
    let workflow = crate::workflow::start(app, backend, options.workflow).await?;
    Ok(LocalServices { engine, workflow })
}

/// The local server's router: the API plus the in-process reference engine.
pub fn local_router(app: App, backend: &LocalBackend, services: &LocalServices) -> axum::Router {
    backend
        .router(app)
        .nest_service(REFERENCE_ENGINE_PREFIX, services.engine.clone().router())
}
