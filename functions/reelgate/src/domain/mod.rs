//! The domain: reelgate's rules and use cases. Each use case takes the ports it uses, or one of
//! two narrow contexts of them: [`Context`] (the item and blob stores, the catalog and the
//! settings: what the request-side use cases need) and [`workflow::Pipeline`] (what the workflow
//! steps and the render worker need). Nothing here sees the assembled application, HTTP routing,
//! SQLite or AWS.

pub mod accounts;
pub mod agreement;
pub mod billing;
pub mod cancel;
pub mod catalog;
pub mod chat;
pub mod console;
pub mod erasure;
pub mod error;
pub mod files;
pub mod idempotency;
pub mod identities;
pub mod ids;
pub mod jobs;
pub mod key_budgets;
pub mod key_controls;
pub mod keys;
pub mod messages;
pub mod metrics;
pub mod moderation;
pub mod native_renders;
pub mod params;
pub mod rate_limits;
pub mod records;
pub mod registry;
pub mod responses;
pub mod retention;
pub mod telemetry;
pub mod trace_context;
pub mod translation;
pub mod uploads;
pub mod usage;
pub mod usage_report;
pub mod video_object;
pub mod videos;
pub mod webhooks;
pub mod workflow;

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
