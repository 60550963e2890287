//! The domain: reelgate's rules and use cases. Each use case takes the ports it uses, or one of
//! two narrow contexts of them: [`Context`] (the item and blob stores, the catalog and the
//! settings: what the request-side use cases need) and [`workflow::Pipeline`] (what the workflow
//! steps and the render worker need). Nothing here sees the assembled application, HTTP routing,
//! SQLite or AWS.

pub mod accounts;
pub mod billing;
pub mod catalog;
pub mod chat;
pub mod dates;
pub mod erasure;
pub mod error;
pub mod fair_slots;
pub mod files;
pub mod idempotency;
pub mod ids;
pub mod messages;
pub mod params;
pub mod responses;
pub mod retention;
pub mod table_keys;
pub mod videos;
pub mod webhooks;

use crate::config::Settings;
use crate::ports::blobs::BlobStore;
use crate::ports::store::ItemStore;
use catalog::Catalog;

/// The stores, the catalog and the settings: the narrow context of the request-side use cases
/// (files, uploads, agreement, usage, chat and responses, admission). Cheap to copy.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub store: &'a dyn ItemStore,
    pub blobs: &'a dyn BlobStore,
    pub catalog: &'a Catalog,
    pub settings: &'a Settings,
    /// The one way to GET a URL a caller can influence (`file_url`).
    pub fetcher: &'a dyn crate::ports::fetch::Fetcher,
    /// The webhook delivery queue; None on a host that sends no webhooks.
    pub webhooks: Option<&'a dyn crate::ports::queue::MessageQueue>,
}

impl<'a> Context<'a> {
    pub fn accounts(&self) -> accounts::Accounts<'a> {
        accounts::Accounts::new(self.store)
    }
}

/// The ports and settings of the use cases, owned: the one owner of the port set. The assembly
/// holds one (`App`), the video pipeline and the Responses use case share it, and each use case
/// borrows its [`Context`] from it; work that outlives a request (a streamed turn charged and
/// stored after its client has gone) keeps a clone.
#[derive(Clone)]
pub struct SharedContext {
    pub store: std::sync::Arc<dyn ItemStore>,
    pub blobs: std::sync::Arc<dyn BlobStore>,
    pub catalog: std::sync::Arc<Catalog>,
    pub settings: std::sync::Arc<Settings>,
    pub fetcher: std::sync::Arc<dyn crate::ports::fetch::Fetcher>,
    pub webhooks: Option<std::sync::Arc<dyn crate::ports::queue::MessageQueue>>,
}

impl SharedContext {
    pub fn context(&self) -> Context<'_> {
        Context {
            store: self.store.as_ref(),
            blobs: self.blobs.as_ref(),
            catalog: &self.catalog,
            settings: &self.settings,
            fetcher: self.fetcher.as_ref(),
            webhooks: self.webhooks.as_deref(),
        }
    }
}
