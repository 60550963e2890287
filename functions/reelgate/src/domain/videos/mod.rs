//! Video jobs: the `video` resource, its storage, and its HTTP surface. Rendering itself is the
//! workflow's (`crate::ports::workflow`); this module admits jobs and serves their results.

pub mod cancel;
pub mod create;
pub mod jobs;
pub mod moderation;
pub mod native_renders;
pub mod object;
pub mod queries;
pub mod record;
pub mod translation;
pub mod workflow;

pub use crate::domain::videos::record::{
    JobInputs, JobRecord, JobStatus, Reservation, RESERVATION_CHARGED, RESERVATION_HELD,
    RESERVATION_RELEASED, RUNNING, STATUS_CANCELED, STATUS_COMPLETED, STATUS_FAILED,
    STATUS_IN_PROGRESS, STATUS_MODERATING, STATUS_QUEUED, STATUS_TRANSLATING, TERMINAL,
};

pub fn output_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/video.mp4")
}

pub fn thumbnail_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/thumbnail.jpg")
}

pub use crate::domain::videos::object::{JobError, Video};
