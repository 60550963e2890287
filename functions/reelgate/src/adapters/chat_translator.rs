//! Translation through a configured text model (the chat upstream port), with a system prompt
//! that asks for English and for placeholders to be kept; `translate_prompt` verifies the result
//! regardless of what the model does.

use crate::ports::translator::{TranslationError, Translator};
use crate::ports::upstream::request::{ChatCompletionRequest, ChatMessage, Role};
use crate::ports::upstream::ChatUpstream;
use async_trait::async_trait;
use serde_json::Value;
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
        let message = |role, text: &str| ChatMessage {
            content: Some(Value::String(text.to_owned())),
            ..ChatMessage::new(role)
        };
        let request = ChatCompletionRequest {
            model: self.model.clone(),
            messages: vec![
                message(Role::System, INSTRUCTIONS),
                message(Role::User, text),
            ],
            temperature: Some(0.into()),
            ..ChatCompletionRequest::default()
        };
        let reply = self
            .upstream
            .complete(request)
            .await
            .map_err(|e| TranslationError::Unavailable(e.to_string()))?;
        reply
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| TranslationError::Unavailable("the model returned no text".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::videos::translation::translate_prompt;
    use crate::ports::upstream::{ChunkStream, Completion, UpstreamError};
    use serde_json::json;
    use std::sync::Mutex;

    /// A fake text model that "translates" by a fixed table and may misbehave on request.
    struct FakeModel {
        reply: String,
        seen: Mutex<Vec<Value>>,
    }

    #[async_trait]
    impl ChatUpstream for FakeModel {
        async fn complete(
            &self,
            request: ChatCompletionRequest,
        ) -> Result<Completion, UpstreamError> {
            self.seen
                .lock()
                .map_err(|e| UpstreamError::Protocol(e.to_string()))?
                .push(request.to_json());
            Completion::from_json(
                json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply}}]}),
            )
        }
        async fn stream(&self, _: ChatCompletionRequest) -> Result<ChunkStream, UpstreamError> {
            Err(UpstreamError::Protocol(
                "the translator does not stream".into(),
            ))
        }
    }

    #[tokio::test]
    async fn translates_through_the_model_and_restores_dialogue() {
        let model = Arc::new(FakeModel {
            reply: "A cat says ⟦0⟧".into(),
            seen: Mutex::new(Vec::new()),
        });
        let t = ChatTranslator::new(model.clone(), "upstream-model");
        let out = translate_prompt(Some(&t), "猫が言う<d>こんにちは</d>")
            .await
            .expect("translated");
        assert_eq!(out, "A cat says <d>こんにちは</d>");
        let sent = model.seen.lock().expect("lock")[0].clone();
        assert_eq!(sent["model"], "upstream-model");
        assert_eq!(sent["messages"][1]["content"], "猫が言う⟦0⟧");
    }

    #[tokio::test]
    async fn a_model_that_drops_the_dialogue_fails_closed() {
        let model = Arc::new(FakeModel {
            reply: "A cat says hello".into(),
            seen: Mutex::new(Vec::new()),
        });
        let t = ChatTranslator::new(model, "m");
        let err = translate_prompt(Some(&t), "猫が言う<d>こんにちは</d>")
            .await
            .expect_err("unfaithful");
        assert!(matches!(err, TranslationError::Unfaithful(_)));
        let model = Arc::new(FakeModel {
            reply: "猫 says ⟦0⟧".into(),
            seen: Mutex::new(Vec::new()),
        });
        let t = ChatTranslator::new(model, "m");
        assert!(translate_prompt(Some(&t), "猫が言う<d>こんにちは</d>")
            .await
            .is_err());
    }
}
