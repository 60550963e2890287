//! Moderation of a job's prompt and reference images before rendering. The port fails closed:
//! any error of the moderator ends the job as `moderation_unavailable`. Each verdict is kept as a
//! moderation record for 30 days, independently of the video (deleting the video keeps it).

pub mod openai;
pub mod rules;

use crate::app::App;
use crate::store::{item, now_secs, Attr, Key};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Moderation records are kept this long, whatever happens to the video.
pub const RECORD_RETENTION_SECS: i64 = 30 * 24 * 3600;

#[derive(Clone, Debug)]
pub struct ModerationInput {
    pub prompt: String,
    /// Images to check, as short-lived URLs with their bytes already fetched.
    pub images: Vec<ImageInput>,
}

#[derive(Clone, Debug)]
pub struct ImageInput {
    pub file_id: String,
    pub url: String,
    pub bytes: bytes::Bytes,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub flagged: bool,
    /// Categories that were flagged (empty when allowed).
    pub categories: Vec<String>,
    /// Which moderator decided.
    pub moderator: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ModerationError {
    #[error("the moderation service is unavailable: {0}")]
    Unavailable(String),
}

#[async_trait]
pub trait Moderator: Send + Sync + 'static {
    async fn check(&self, input: &ModerationInput) -> Result<Verdict, ModerationError>;
}

pub fn record_key(org: &str, video_id: &str) -> Key {
    Key::new(format!("ORG#{org}"), format!("MODERATION#{video_id}"))
}

/// Keeps the verdict for 30 days (not deleted with the video).
pub async fn keep_record(
    app: &App,
    org: &str,
    video_id: &str,
    verdict: &Verdict,
) -> crate::error::ApiResult<()> {
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
        crate::store::EXPIRES_AT.into(),
        (now + RECORD_RETENTION_SECS).into(),
    );
    app.store.put(it, None).await?;
    Ok(())
}

/// Builds the moderator named by `REELGATE_MODERATOR` (`rules`, the default, or `openai`).
pub fn from_env() -> anyhow::Result<std::sync::Arc<dyn Moderator>> {
    match std::env::var("REELGATE_MODERATOR").as_deref() {
        Ok("openai") => Ok(std::sync::Arc::new(openai::OpenAiModerator::from_env()?)),
        Ok("rules") | Err(_) => Ok(std::sync::Arc::new(rules::RuleModerator::from_env()?)),
        Ok(other) => anyhow::bail!("REELGATE_MODERATOR={other}: use rules or openai"),
    }
}
