//! Translation through a configured text model (the chat upstream port), with a system prompt
//! that asks for English and for placeholders to be kept; `translate_prompt` verifies the result
//! regardless of what the model does.

use super::*;
use crate::upstream::ChatUpstream;
use serde_json::json;
use std::sync::Arc;

pub struct ChatTranslator {
    upstream: Arc<dyn ChatUpstream>,
    /// The model name the upstream knows.
    model: String,
}

const INSTRUCTIONS: &str = "You translate video-generation prompts from Japanese to English. \
Reply with the English translation only. Keep every placeholder of the form ⟦n⟧ exactly as it \
is, in the place it belongs; never translate, remove, duplicate or renumber them.";

impl ChatTranslator {
    pub fn new(upstream: Arc<dyn ChatUpstream>, model: &str) -> Self {
        ChatTranslator {
            upstream,
            model: model.to_owned(),
        }
    }
}

#[async_trait]
impl Translator for ChatTranslator {
    async fn translate(&self, text: &str) -> Result<String, TranslationError> {
        let request = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": text},
            ],
            "temperature": 0,
        });
        let reply = self
            .upstream
            .complete(request)
            .await
            .map_err(|e| TranslationError::Unavailable(e.to_string()))?;
        reply["choices"][0]["message"]["content"]
            .as_str()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| TranslationError::Unavailable("the model returned no text".into()))
    }
}
