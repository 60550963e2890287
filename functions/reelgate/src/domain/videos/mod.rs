//! Video jobs: the `video` resource, its storage, and its HTTP surface. Rendering itself is the
//! workflow's (`crate::ports::workflow`); this module admits jobs and serves their results.

pub mod cancel;
pub mod characters;
pub mod create;
pub mod create_request;
pub mod edits;
pub mod events;
pub mod extensions;
pub mod jobs;
pub mod moderation;
pub mod object;
pub mod queries;
pub mod record;
pub mod remix;
pub mod settlement;
pub mod source_request;
pub mod source_upload;
pub mod translation;
pub mod workflow;

pub use crate::domain::videos::record::{
    JobInputs, JobRecord, JobStatus, Reservation, SourceOperation, SourceUse, RESERVATION_CHARGED,
    RESERVATION_HELD, RESERVATION_RELEASED, RUNNING, STATUS_CANCELED, STATUS_COMPLETED,
    STATUS_FAILED, STATUS_IN_PROGRESS, STATUS_MODERATING, STATUS_QUEUED, STATUS_TRANSLATING,
    TERMINAL,
};

pub fn output_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/video.mp4")
}

pub fn thumbnail_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/thumbnail.jpg")
}

/// The JPEG grid of frames (`GET /v1/videos/{id}/content?variant=spritesheet`).
pub fn spritesheet_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/spritesheet.jpg")
}

/// The job's own copy of the video it was made from (a remix's source): taken at admission, so
/// that deleting the source, or its retention ending, never breaks a job made from it.
pub fn source_video_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/source.mp4")
}

/// The source's first frame, which a render chained onto the source opens with (taken by the
/// moderate step, which decodes the source's frames anyway).
pub fn source_frame_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/source_frame.jpg")
}

/// An extension's segment as the stitch step conformed it.
pub fn segment_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/segment.mp4")
}

/// An extension's source and segment joined, which finalize checks and completes.
pub fn stitched_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/stitched.mp4")
}

/// An extension's uploaded source conformed to the job's size, before the stitch joins it.
pub fn conformed_source_blob_key(org: &str, video_id: &str) -> String {
    format!("{org}/videos/{video_id}/source_conformed.mp4")
}

/// The job's own copy of frame `i` of the characters it names (reference images), taken at
/// admission so that deleting a character never takes a running job's input.
pub fn character_frame_blob_key(org: &str, video_id: &str, i: usize) -> String {
    format!("{org}/videos/{video_id}/character_{i}.jpg")
}

/// Every blob a job owns: deleting the job, or its retention ending, deletes these.
pub fn job_blob_keys(org: &str, video_id: &str) -> Vec<String> {
    let mut keys = vec![
        output_blob_key(org, video_id),
        thumbnail_blob_key(org, video_id),
        spritesheet_blob_key(org, video_id),
        source_video_blob_key(org, video_id),
        source_frame_blob_key(org, video_id),
        segment_blob_key(org, video_id),
        stitched_blob_key(org, video_id),
        conformed_source_blob_key(org, video_id),
    ];
    keys.extend(
        (0..record::MAX_CHARACTER_FRAMES).map(|i| character_frame_blob_key(org, video_id, i)),
    );
    keys
}

pub use crate::domain::videos::object::{JobError, Video};
