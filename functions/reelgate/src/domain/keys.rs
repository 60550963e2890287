//! The video job's key and its status and reservation values, shared by the modules that
//! change a job (admission in `videos`, settlement in `billing`, state changes in `jobs`, the
//! workflow steps) so none of them imports another in a circle.

use crate::ports::store::{ItemExt, ItemStore, Key, Query, StoreError};

pub const STATUS_MODERATING: &str = "moderating";
pub const STATUS_TRANSLATING: &str = "translating";
pub const STATUS_QUEUED: &str = "queued";
pub const STATUS_IN_PROGRESS: &str = "in_progress";
pub const STATUS_COMPLETED: &str = "completed";
pub const STATUS_FAILED: &str = "failed";
pub const STATUS_CANCELED: &str = "canceled";

pub const TERMINAL: &[&str] = &[STATUS_COMPLETED, STATUS_FAILED, STATUS_CANCELED];
pub const RUNNING: &[&str] = &[
    STATUS_MODERATING,
    STATUS_TRANSLATING,
    STATUS_QUEUED,
    STATUS_IN_PROGRESS,
];

/// The reservation of a job's quote: held from admission until charged or released, once.
pub const RESERVATION_HELD: &str = "held";
pub const RESERVATION_CHARGED: &str = "charged";
pub const RESERVATION_RELEASED: &str = "released";

pub fn job_key(org: &str, video_id: &str) -> Key {
    Key::new(format!("ORG#{org}"), format!("VIDEO#{video_id}"))
}

/// The markers of a marker partition (`UNSTARTED`, `UNSENT_EVENTS`: sort key `VIDEO#<id>`, each
/// naming its `org` and `video_id`) written at or before `cutoff`, as (org, video id), read a
/// page at a time. Only the recovery passes read these partitions.
pub async fn markers_written_by(
    store: &dyn ItemStore,
    partition: &str,
    cutoff: i64,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut found = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .query(
                Query::partition(partition)
                    .prefix("VIDEO#")
                    .limit(100)
                    .after(after.take()),
            )
            .await?;
        for marker in &page.items {
            if let (Some(org), Some(video_id)) =
                (marker.str_attr("org"), marker.str_attr("video_id"))
            {
                if marker.i64_attr("created_at").unwrap_or(0) <= cutoff {
                    found.push((org.to_owned(), video_id.to_owned()));
                }
            }
        }
        match page.last_sk {
            Some(sk) => after = Some(sk),
            None => return Ok(found),
        }
    }
}
