//! A Messages request as translated: the chat request the chat rules validate, and what the
//! answer's translation and the upstream need from the original past those rules (the exact
//! thinking budget, signed thinking blocks, cache points).

use crate::ports::upstream::request::ChatCompletionRequest;
use crate::ports::upstream::{extension, CachePoint};
use serde_json::Value;

/// The chat request and what the answer's translation needs from the original.
#[derive(Debug, Clone)]
pub struct Translated {
    /// The chat-completions request (with `model`), for `chat::validate`.
    pub chat: Value,
    pub stream: bool,
    pub stop_sequences: Vec<String>,
    /// `thinking.budget_tokens`, exactly (the chat body carries only the nearest effort).
    pub thinking_budget: Option<u64>,
    /// Where the request's `cache_control` blocks put cache points, in the chat request.
    pub cache_points: Vec<CachePoint>,
    /// For a token count: the tokens of the images and documents read from URLs, which were
    /// measured and then dropped (each stands in the chat request as a short text placeholder),
    /// so that a count never holds every fetched file at once.
    pub measured_tokens: u64,
}

impl Translated {
    /// Takes out of the chat request what the chat rules do not carry ([`extension`]): the
    /// exact thinking budget, and each assistant message's thinking blocks (the rules drop
    /// message keys they do not know), to be put into their validated request.
    pub fn take_extensions(&mut self) -> Extensions {
        let reasoning_blocks = match self.chat.get_mut("messages") {
            Some(Value::Array(messages)) => messages
                .iter_mut()
                .map(|m| {
                    m.as_object_mut()
                        .and_then(|m| m.remove(extension::REASONING_BLOCKS))
                })
                .collect(),
            _ => Vec::new(),
        };
        Extensions {
            thinking_budget: self.thinking_budget,
            reasoning_blocks,
            cache_points: std::mem::take(&mut self.cache_points),
        }
    }
}

/// What a translated request carries past the chat rules, by message (the rules keep messages
/// one for one and in order).
#[derive(Debug, Default)]
pub struct Extensions {
    thinking_budget: Option<u64>,
    reasoning_blocks: Vec<Option<Value>>,
    cache_points: Vec<CachePoint>,
}

impl Extensions {
    /// Puts the extensions into the chat rules' validated request.
    pub fn carry(self, request: &mut ChatCompletionRequest) {
        request.thinking_budget = self.thinking_budget;
        if !self.cache_points.is_empty() {
            request.cache_points = Some(self.cache_points);
        }
        for (blocks, message) in self
            .reasoning_blocks
            .into_iter()
            .zip(request.messages.iter_mut())
        {
            if blocks.is_some() {
                message.reasoning_blocks = blocks;
            }
        }
    }
}
