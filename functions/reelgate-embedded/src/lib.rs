//! reelgate's embedded adapters and the local host: the whole service as one process on one
//! data directory. A SQLite file holds the item store (`store`), the queues (`queue`) and the
//! workflow runner's journal (`journal`); a directory holds the blobs (`blobs`), served to
//! engines and clients through URLs this process signs (`blobs_route`); `backend` opens them
//! together. The embedded ASL runner executes `statemachine/video.asl.json` (`workflow`). The
//! services that run beside the API are modules of their own: the render workers
//! (`render_worker`), webhook delivery (`webhook_delivery`), the retention sweep (`retention`)
//! and the recovery and reconcile passes (`recovery`). `host` alone knows them all: it assembles
//! the App and starts them for `reelgate serve`, so no module here imports one that imports it.
//!
//! Lambda binaries never link this crate: they use `reelgate-aws`.

pub mod backend;
pub mod blobs;
pub mod blobs_route;
pub mod db;
pub mod host;
pub mod items;
pub mod journal;
pub mod listener;
pub mod pdf_child;
pub mod queue;
pub mod rate_windows;
pub mod recovery;
pub mod render_worker;
pub mod retention;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod webhook_delivery;
pub mod workflow;
