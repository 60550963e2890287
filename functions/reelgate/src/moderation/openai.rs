//! An OpenAI-compatible moderation endpoint (`POST {base}/v1/moderations`, e.g. OpenAI's
//! `omni-moderation-latest`, which takes text and image URLs). Any transport or protocol error
//! is `Unavailable`, so the job fails closed.

use super::*;
use serde_json::{json, Value};

pub struct OpenAiModerator {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    model: String,
}

impl OpenAiModerator {
    pub fn new(base_url: &str, api_key: Option<String>, model: &str) -> Self {
        OpenAiModerator {
            http: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .unwrap_or_default(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model: model.to_owned(),
        }
    }

    /// `REELGATE_MODERATION_BASE_URL` (required), `REELGATE_MODERATION_API_KEY`,
    /// `REELGATE_MODERATION_MODEL` (default `omni-moderation-latest`).
    pub fn from_env() -> anyhow::Result<Self> {
        let base = std::env::var("REELGATE_MODERATION_BASE_URL").map_err(|_| {
            anyhow::anyhow!("REELGATE_MODERATOR=openai needs REELGATE_MODERATION_BASE_URL")
        })?;
        let model = std::env::var("REELGATE_MODERATION_MODEL")
            .unwrap_or_else(|_| "omni-moderation-latest".into());
        Ok(Self::new(
            &base,
            std::env::var("REELGATE_MODERATION_API_KEY").ok(),
            &model,
        ))
    }
}

#[async_trait]
impl Moderator for OpenAiModerator {
    async fn check(&self, input: &ModerationInput) -> Result<Verdict, ModerationError> {
        let mut parts = vec![json!({"type": "text", "text": input.prompt})];
        for image in &input.images {
            parts.push(json!({"type": "image_url", "image_url": {"url": image.url}}));
        }
        let mut req = self
            .http
            .post(format!("{}/v1/moderations", self.base_url))
            .json(&json!({"model": self.model, "input": parts}));
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let res = req
            .send()
            .await
            .map_err(|e| ModerationError::Unavailable(e.to_string()))?;
        if !res.status().is_success() {
            return Err(ModerationError::Unavailable(format!(
                "moderation endpoint answered {}",
                res.status()
            )));
        }
        let body: Value = res
            .json()
            .await
            .map_err(|e| ModerationError::Unavailable(e.to_string()))?;
        let results = body["results"]
            .as_array()
            .filter(|r| !r.is_empty())
            .ok_or_else(|| {
                ModerationError::Unavailable("moderation reply has no results".into())
            })?;
        let mut categories = Vec::new();
        let mut flagged = false;
        for r in results {
            flagged |= r["flagged"].as_bool().unwrap_or(false);
            if let Some(cats) = r["categories"].as_object() {
                for (name, hit) in cats {
                    if hit.as_bool() == Some(true) && !categories.contains(name) {
                        categories.push(name.clone());
                    }
                }
            }
        }
        Ok(Verdict {
            flagged,
            categories,
            moderator: format!("openai:{}", self.model),
        })
    }
}
