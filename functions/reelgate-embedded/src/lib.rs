//! reelgate's embedded adapters and the local host: the whole service as one process on one
//! data directory. A SQLite file holds the item store (`store`), the render queue (`queue`) and
//! the workflow runner's journal; a directory holds the blobs (`blobs`), served to engines and
//! clients through URLs this process signs (`blobs_route`); the embedded ASL runner executes
//! `statemachine/video.asl.json` (`workflow`, which also runs the render workers and, every few
//! minutes, the retention sweep of `retention`); `host` wires them with the reference engine for `reelgate serve`.
//!
//! Lambda binaries never link this crate: they use `reelgate-aws`.

pub mod blobs;
pub mod blobs_route;
pub mod db;
pub mod host;
pub mod listener;
pub mod pdf_child;
pub mod queue;
pub mod retention;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod workflow;
