//! The translator port: Japanese prompt text to English, keeping every `⟦n⟧` placeholder.
//! The rules around it (which spans are protected, how the result is verified) live in
//! `domain::videos::translation`.

use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
pub enum TranslationError {
    #[error("no translator is configured for Japanese prompts")]
    NotConfigured,
    #[error("the translator is unavailable: {0}")]
    Unavailable(String),
    #[error("the translation did not keep the protected text: {0}")]
    Unfaithful(String),
}

#[async_trait]
pub trait Translator: Send + Sync + 'static {
    /// Translates Japanese text to English, keeping every `⟦n⟧` placeholder as it is.
    async fn translate(&self, text: &str) -> Result<String, TranslationError>;
}
