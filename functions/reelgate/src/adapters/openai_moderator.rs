//! An OpenAI-compatible moderation endpoint (`POST {base}/v1/moderations`, e.g. OpenAI's
//! `omni-moderation-latest`, which takes text and image URLs). Any transport or protocol error
//! is `Unavailable`, so the job fails closed.

use crate::ports::moderator::{ModerationError, ModerationInput, Moderator, Verdict};
use async_trait::async_trait;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::moderator::ImageInput;
    use axum::routing::post;
    use std::sync::{Arc, Mutex};

    /// A fake moderation endpoint: flags any input mentioning "forbidden", records what it got.
    async fn fake_endpoint(seen: Arc<Mutex<Vec<Value>>>, status: u16) -> String {
        let app = axum::Router::new().route(
            "/v1/moderations",
            post(move |axum::Json(body): axum::Json<Value>| {
                let seen = seen.clone();
                async move {
                    let flagged = body.to_string().contains("forbidden");
                    seen.lock().expect("lock").push(body);
                    let reply = json!({"id": "modr_fake", "results": [{
                        "flagged": flagged,
                        "categories": {"violence": flagged, "sexual": false},
                    }]});
                    (
                        axum::http::StatusCode::from_u16(status)
                            .unwrap_or(axum::http::StatusCode::OK),
                        axum::Json(reply),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        url
    }

    #[tokio::test]
    async fn sends_text_and_image_urls_and_reads_the_verdict() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let url = fake_endpoint(seen.clone(), 200).await;
        let m = OpenAiModerator::new(&url, Some("sk-test".into()), "omni-moderation-latest");
        let input = ModerationInput {
            prompt: "a forbidden scene".into(),
            images: vec![ImageInput {
                file_id: "file_x".into(),
                url: "https://example.invalid/signed.png".into(),
                bytes: bytes::Bytes::new(),
            }],
        };
        let verdict = m.check(&input).await.expect("verdict");
        assert!(verdict.flagged);
        assert_eq!(verdict.categories, vec!["violence"]);
        let sent = seen.lock().expect("lock")[0].clone();
        assert_eq!(sent["model"], "omni-moderation-latest");
        assert_eq!(
            sent["input"][1]["image_url"]["url"],
            "https://example.invalid/signed.png"
        );
        let clean = ModerationInput {
            prompt: "a meadow".into(),
            images: vec![],
        };
        assert!(!m.check(&clean).await.expect("verdict").flagged);
    }

    #[tokio::test]
    async fn an_error_status_or_no_endpoint_is_unavailable() {
        let url = fake_endpoint(Arc::new(Mutex::new(Vec::new())), 500).await;
        let input = ModerationInput {
            prompt: "x".into(),
            images: vec![],
        };
        let err = OpenAiModerator::new(&url, None, "m").check(&input).await;
        assert!(matches!(err, Err(ModerationError::Unavailable(_))));
        let closed = OpenAiModerator::new("http://127.0.0.1:9", None, "m")
            .check(&input)
            .await;
        assert!(matches!(closed, Err(ModerationError::Unavailable(_))));
    }
}
