//! Moderation of a job's prompt and reference images before rendering. The port fails closed:
//! any error of the moderator ends the job as `moderation_unavailable`. Each verdict is kept as a
//! moderation record for 30 days, independently of the video (deleting the video keeps it).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

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

/// The stand-in of a host that moderates nothing: every check fails as unavailable, so a job
/// that reaches moderation without a moderator ends as `moderation_unavailable` (fail closed).
pub struct NoModerator;

#[async_trait]
impl Moderator for NoModerator {
    async fn check(&self, _input: &ModerationInput) -> Result<Verdict, ModerationError> {
        Err(ModerationError::Unavailable(
            "this host has no moderator configured".into(),
        ))
    }
}
