//! The video job's key and its status and reservation values, shared by the modules that
//! change a job (admission in `videos`, settlement in `billing`, state changes in `jobs`, the
//! workflow steps) so none of them imports another in a circle.

use crate::ports::store::Key;

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
