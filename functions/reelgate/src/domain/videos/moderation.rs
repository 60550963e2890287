//! Moderation records: each verdict on a job's prompt and images is kept for 30 days,
//! independently of the video (deleting the video keeps it).

use crate::ports::moderator::Verdict;
use crate::ports::store::{item, now_secs, Attr, ItemStore, Key};

/// Moderation records are kept this long, whatever happens to the video.
pub const RECORD_RETENTION_SECS: i64 = 30 * 24 * 3600;

pub fn record_key(org: &str, video_id: &str) -> Key {
    crate::domain::table_keys::moderation(org, video_id)
}

/// Keeps the verdict for 30 days (not deleted with the video).
pub async fn keep_record(
    store: &dyn ItemStore,
    org: &str,
    video_id: &str,
    verdict: &Verdict,
) -> crate::domain::error::ApiResult<()> {
    let now = now_secs();
    let mut it = item(&record_key(org, video_id));
    it.insert("kind".into(), "moderation_record".into());
    it.insert("video_id".into(), video_id.into());
    it.insert(
        "verdict".into(),
        (if verdict.flagged {
            "blocked"
        } else {
            "allowed"
        })
        .into(),
    );
    it.insert(
        "categories".into(),
        Attr::L(
            verdict
                .categories
                .iter()
                .map(|c| Attr::S(c.clone()))
                .collect(),
        ),
    );
    it.insert("moderator".into(), verdict.moderator.clone().into());
    it.insert("checked_at".into(), now.into());
    it.insert(
        crate::ports::store::EXPIRES_AT.into(),
        (now + RECORD_RETENTION_SECS).into(),
    );
    store.put(it, None).await?;
    Ok(())
}
