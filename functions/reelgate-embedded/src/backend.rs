//! The local backend: the embedded adapters of the storage ports over one data directory (a
//! SQLite file for the item store and the queues, a blob directory behind signed URLs). It is
//! plain state, opened before anything runs; the App and the background services are built on
//! it, so it knows neither.

use crate::blobs::{LocalBlobStore, UrlSigner};
use crate::db::Database;
use crate::queue::SqliteQueue;
use crate::store::SqliteItemStore;
use reelgate::app::App;
use reelgate::config::Settings;
use reelgate::domain::catalog::Catalog;
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
    /// Webhook deliveries (`reelgate::domain::webhooks`), consumed by `webhook_delivery`.
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
            store: Arc::new(SqliteItemStore::with_memory_windows(db.clone())?),
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

    /// An App over these adapters, without a workflow runner (the host that runs one adds it
    /// with [`App::with_workflow`] before the App is shared).
    pub fn app(&self, catalog: Arc<Catalog>, settings: Settings) -> App {
        let mut app = App::new(
            self.store.clone(),
            self.blobs.clone(),
            self.render_queue.clone(),
            catalog,
            settings,
        );
        app.webhooks = Some(self.webhook_queue.clone());
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
