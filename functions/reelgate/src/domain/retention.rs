//! How long stored things live, and which blobs a record owns: the one place both hosts' sweeps,
//! the S3 lifecycle rule and erasure read, so a record never disappears while its bytes stay.
//! The inventory behind these rules is `docs/data.md`.

use crate::ports::store::{Item, ItemExt, PK, SK};

const DAY: i64 = 24 * 3600;

/// Finished jobs (with their outputs and thumbnails), uploaded files, stored responses and
/// moderation records are kept 30 days: jobs from when they finish, the rest from creation.
pub const RETENTION_SECS: i64 = 30 * DAY;

/// No blob outlives this age, whatever its record says: the S3 lifecycle rule on AWS and the
/// blob-directory sweep locally. Every blob is written when its record's retention starts
/// (upload, job finish, response stored), so this never cuts a retention short.
pub const BLOB_MAX_AGE_SECS: i64 = RETENTION_SECS;

/// Render messages that exhausted their receives stay in the dead-letter queue this long (the
/// SQS maximum, 14 days), for an operator to inspect.
pub const DEAD_LETTER_RETENTION_SECS: i64 = 14 * DAY;

/// A partial upload (a temporary file locally, a multipart upload on S3) left behind by a crash
/// is removed after a day.
pub const STAGING_MAX_AGE_SECS: i64 = DAY;

/// The blobs that `item` owns: deleting the record deletes these, blobs first, so that a crash
/// in between leaves a record without bytes (which reads as gone) rather than bytes nobody can
/// find.
///
/// - a video job owns its MP4, its thumbnail and spritesheet, and the copy of its source with
///   that source's first frame (a remix);
/// - an uploaded file owns its bytes, a character its frames;
/// - an upload owns the staging blob its URL writes (`complete` copies it to the file's blob and
///   deletes it, but a PUT after `complete` may write it again);
/// - a stored response or item kept outside the table owns that body.
pub fn owned_blobs(item: &Item) -> Vec<String> {
    let (Some(pk), Some(sk)) = (item.str_attr(PK), item.str_attr(SK)) else {
        return Vec::new();
    };
    let mut blobs = Vec::new();
    if let Some(body) = item.str_attr("body_blob") {
        blobs.push(body.to_owned());
    }
    // Organization-scoped records only: per-person partitions (`ORG#<org>#PERSON#<person>`)
    // own nothing but their bodies.
    let Some(org) = crate::domain::table_keys::org_of_pk(pk) else {
        return blobs;
    };
    if let Some(video_id) = sk.strip_prefix(crate::domain::table_keys::VIDEO_PREFIX) {
        blobs.extend(crate::domain::videos::job_blob_keys(org, video_id));
    } else if let Some(id) = sk.strip_prefix(crate::domain::table_keys::CHARACTER_PREFIX) {
        blobs.extend(crate::domain::videos::characters::blob_keys(org, id));
    } else if let Some(file_id) = sk.strip_prefix(crate::domain::table_keys::FILE_PREFIX) {
        blobs.push(crate::domain::files::blob_key(org, file_id));
    } else if let Some(upload_id) = sk.strip_prefix(crate::domain::table_keys::UPLOAD_PREFIX) {
        blobs.push(crate::domain::files::uploads::staging_blob_key(
            org, upload_id,
        ));
    }
    blobs
}

/// What a blob key is, for "bytes stored by kind" reports.
pub fn blob_kind(key: &str) -> &'static str {
    let mut parts = key.split('/').skip(1);
    match (parts.next(), key.rsplit('/').next()) {
        (Some("videos"), Some("video.mp4")) => "video_outputs",
        (Some("videos"), Some("thumbnail.jpg" | "spritesheet.jpg")) => "thumbnails",
        (Some("videos"), Some("source.mp4" | "source_conformed.mp4" | "source_frame.jpg")) => {
            "video_sources"
        }
        (Some("videos"), Some(name)) if name.starts_with("character_") => "characters",
        (Some("videos"), _) => "video_other",
        (Some("files"), _) => "files",
        (Some("characters"), _) => "characters",
        (Some("responses"), _) => "stored_responses",
        _ if key.starts_with(crate::domain::files::uploads::STAGING_PREFIX) => "upload_staging",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::store::{item, Key};

    fn record(pk: &str, sk: &str, attrs: &[(&str, &str)]) -> Item {
        let mut it = item(&Key::new(pk, sk));
        for (k, v) in attrs {
            it.insert((*k).into(), (*v).into());
        }
        it
    }

    #[test]
    fn each_record_names_the_blobs_it_owns() {
        let job = owned_blobs(&record("ORG#org_1", "VIDEO#video_9", &[]));
        assert_eq!(
            job[..5],
            [
                "org_1/videos/video_9/video.mp4",
                "org_1/videos/video_9/thumbnail.jpg",
                "org_1/videos/video_9/spritesheet.jpg",
                "org_1/videos/video_9/source.mp4",
                "org_1/videos/video_9/source_frame.jpg"
            ]
        );
        assert_eq!(job[7], "org_1/videos/video_9/source_conformed.mp4");
        assert_eq!(job[8], "org_1/videos/video_9/character_0.jpg");
        assert_eq!(
            job.len(),
            8 + crate::domain::videos::record::MAX_CHARACTER_FRAMES
        );
        assert_eq!(
            owned_blobs(&record("ORG#org_1", "CHARACTER#char_3", &[])).len(),
            4
        );
        assert_eq!(
            owned_blobs(&record("ORG#org_1", "FILE#file_2", &[])),
            vec!["org_1/files/file_2"]
        );
        assert_eq!(
            owned_blobs(&record("ORG#org_1", "UPLOAD#upload_1", &[])),
            vec!["staging/org_1/upload_1"]
        );
        let body = [("body_blob", "org_1/responses/user_1/response/resp_1.json")];
        assert_eq!(
            owned_blobs(&record("ORG#org_1#PERSON#user_1", "RESPONSE#resp_1", &body)),
            vec!["org_1/responses/user_1/response/resp_1.json"]
        );
        assert!(owned_blobs(&record("ORG#org_1", "MODERATION#video_9", &[])).is_empty());
        assert!(owned_blobs(&record("ORG#org_1", "LEDGER#l1", &[])).is_empty());
    }

    #[test]
    fn blob_keys_have_kinds() {
        assert_eq!(blob_kind("o/videos/v/video.mp4"), "video_outputs");
        assert_eq!(blob_kind("o/videos/v/thumbnail.jpg"), "thumbnails");
        assert_eq!(blob_kind("o/videos/v/spritesheet.jpg"), "thumbnails");
        assert_eq!(blob_kind("o/videos/v/source.mp4"), "video_sources");
        assert_eq!(blob_kind("o/files/f"), "files");
        assert_eq!(blob_kind("o/responses/u/item/i.json"), "stored_responses");
    }
}
