//! Amazon Bedrock through Converse / ConverseStream, behind the OpenAI-shaped port.
//!
//! Request mapping: `system`/`developer` messages → `system` blocks; user text, images, videos
//! and documents → content blocks (Bedrock wants bytes, so image/video URLs — our presigned
//! URLs included — are fetched and data URLs decoded here); assistant `tool_calls` → `toolUse`
//! blocks; `tool` messages → `toolResult` blocks in a user turn (consecutive turns of one role
//! are merged, as Converse requires alternation); `max_(completion_)tokens`, `temperature`,
//! `top_p`, `stop` → `inferenceConfig`; `tools`/`tool_choice` → `toolConfig`;
//! `reasoning_effort` → `additionalModelRequestFields` (Anthropic models: a `thinking` token
//! budget; others: `reasoningConfig.maxReasoningEffort`); `top_k` likewise.
//! Reply mapping: text, `toolUse` → `tool_calls`, reasoning text → `reasoning_content`, stop
//! reason → `finish_reason`, token usage → `usage` (cache reads and writes in
//! `prompt_tokens_details`, and counted in `prompt_tokens` as OpenAI counts them).
//! Cache points (the `reelgate_cache_points` extension) → `cachePoint` blocks right after the
//! tool, system text or content block they follow (Nova takes none among the tools).
//!
//! Retries: the SDK's own retries are off; only a failure to connect is retried here, so a
//! request that reached Bedrock never runs twice.

mod request;

use async_trait::async_trait;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::types as bt;
use reelgate::domain::catalog::UpstreamConfig;
use reelgate::ports::upstream::completion::{
    CompletionChoice, CompletionMessage, FunctionCall, ToolCall,
};
use reelgate::ports::upstream::extension::REASONING_SIGNATURE;
use reelgate::ports::upstream::{
    ChatCompletionRequest, ChatUpstream, ChunkStream, Completion, CompletionChunk, UpstreamError,
};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::Duration;

pub use request::{document_to_json, json_to_document};

const CONNECT_RETRIES: u32 = 3;
const RETRY_BASE: Duration = Duration::from_millis(100);

pub struct BedrockUpstream {
    client: aws_sdk_bedrockruntime::Client,
    fetcher: reelgate::adapters::guarded_fetch::GuardedFetcher,
}

impl BedrockUpstream {
    /// `region` from the catalog (else the environment's); `base_url`, when set, overrides the
    /// endpoint (a local emulator). Credentials come from the standard chain.
    pub async fn from_config(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let mut loader =
            crate::sdk_loader().retry_config(aws_config::retry::RetryConfig::disabled());
        if let Some(region) = config.region.as_deref().filter(|r| !r.is_empty()) {
            loader = loader.region(aws_config::Region::new(region.to_owned()));
        }
        if let Some(url) = config
            .base_url
            .as_deref()
            .map(reelgate::config::expand_env)
            .filter(|u| !u.is_empty())
        {
            loader = loader.endpoint_url(url);
        }
        let shared = loader.load().await;
        Ok(BedrockUpstream {
            client: aws_sdk_bedrockruntime::Client::new(&shared),
            fetcher: Default::default(),
        })
    }
}

fn finish_reason(reason: &bt::StopReason) -> &'static str {
    match reason {
        bt::StopReason::ToolUse => "tool_calls",
        bt::StopReason::MaxTokens | bt::StopReason::ModelContextWindowExceeded => "length",
        bt::StopReason::ContentFiltered | bt::StopReason::GuardrailIntervened => "content_filter",
        _ => "stop",
    }
}

/// Converse's usage as chat's: Converse counts cache reads and writes apart from `inputTokens`;
/// chat's `prompt_tokens` holds them, with the split in `prompt_tokens_details`.
fn usage_json(u: &bt::TokenUsage) -> Value {
    let read = u.cache_read_input_tokens().unwrap_or(0).max(0);
    let written = u.cache_write_input_tokens().unwrap_or(0).max(0);
    let prompt = i64::from(u.input_tokens().max(0)) + i64::from(read) + i64::from(written);
    let completion = i64::from(u.output_tokens().max(0));
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
    })
}

/// Bedrock's error codes as HTTP statuses, so the gateway maps them like any upstream's.
fn sdk_error<E: ProvideErrorMetadata + std::fmt::Debug, R: std::fmt::Debug>(
    e: SdkError<E, R>,
) -> UpstreamError {
    match &e {
        SdkError::DispatchFailure(d) if d.is_timeout() => UpstreamError::Rejected {
            status: 504,
            code: Some("timeout".into()),
            message: format!("{d:?}"),
            retry_after: None,
        },
        SdkError::DispatchFailure(d) => UpstreamError::Unreachable(format!("{d:?}")),
        SdkError::TimeoutError(_) => UpstreamError::Rejected {
            status: 504,
            code: Some("timeout".into()),
            message: "Bedrock timed out".into(),
            retry_after: None,
        },
        SdkError::ServiceError(_) => {
            let code = e.code().unwrap_or("Unknown").to_owned();
            let status = match code.as_str() {
                "ValidationException" => 400,
                "AccessDeniedException" => 403,
                "ResourceNotFoundException" => 404,
                "ModelTimeoutException" => 408,
                "ThrottlingException" | "ServiceQuotaExceededException" => 429,
                "ModelNotReadyException" | "ServiceUnavailableException" => 503,
                "InternalServerException" => 500,
                _ => 502,
            };
            UpstreamError::Rejected {
                status,
                code: Some(code),
                message: e.message().unwrap_or_default().to_owned(),
                retry_after: None,
            }
        }
        _ => UpstreamError::Protocol(format!("{e:?}")),
    }
}

/// Is this a failure to reach Bedrock at all (nothing was sent)?
fn is_connect_failure<E, R>(e: &SdkError<E, R>) -> bool {
    matches!(e, SdkError::DispatchFailure(d) if d.is_io() && !d.is_timeout())
}

/// Sends a call, retrying only failures to connect (nothing reached Bedrock), with backoff.
async fn send_retrying_connects<T, E, R, F, Fut>(mut send: F) -> Result<T, UpstreamError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, SdkError<E, R>>>,
    E: ProvideErrorMetadata + std::fmt::Debug,
    R: std::fmt::Debug,
{
    let mut attempt = 0;
    loop {
        match send().await {
            Ok(output) => return Ok(output),
            Err(e) if is_connect_failure(&e) && attempt < CONNECT_RETRIES => {
                tokio::time::sleep(RETRY_BASE * 2u32.pow(attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(sdk_error(e)),
        }
    }
}

#[async_trait]
impl ChatUpstream for BedrockUpstream {
    async fn complete(&self, request: ChatCompletionRequest) -> Result<Completion, UpstreamError> {
        let request = request.to_json();
        let m = self.map(&request).await?;
        let output = send_retrying_connects(|| {
            self.client
                .converse()
                .model_id(&m.model_id)
                .set_system(Some(m.system.clone()).filter(|s| !s.is_empty()))
                .set_messages(Some(m.messages.clone()))
                .inference_config(m.inference.clone())
                .set_tool_config(m.tools.clone())
                .set_additional_model_request_fields(m.additional.clone())
                .send()
        })
        .await?;
        let mut content = String::new();
        let mut reasoning = String::new();
        let mut signature = None;
        let mut calls = Vec::new();
        if let Some(bt::ConverseOutput::Message(message)) = output.output() {
            for block in message.content() {
                match block {
                    bt::ContentBlock::Text(t) => content.push_str(t),
                    bt::ContentBlock::ToolUse(t) => calls.push(ToolCall {
                        id: Some(t.tool_use_id().to_owned()),
                        kind: "function".into(),
                        function: FunctionCall {
                            name: t.name().to_owned(),
                            arguments: document_to_json(t.input()).to_string(),
                            rest: Map::new(),
                        },
                        rest: Map::new(),
                    }),
                    bt::ContentBlock::ReasoningContent(
                        bt::ReasoningContentBlock::ReasoningText(r),
                    ) => {
                        reasoning.push_str(r.text());
                        if let Some(sig) = r.signature() {
                            signature = Some(sig.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut extensions = Map::new();
        if let Some(sig) = signature {
            extensions.insert(REASONING_SIGNATURE.into(), Value::String(sig));
        }
        let message = CompletionMessage {
            content: Some(content),
            reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
            tool_calls: (!calls.is_empty()).then_some(calls),
            rest: extensions,
            ..CompletionMessage::default()
        };
        let mut rest = Map::new();
        rest.insert("id".into(), "bedrock".into());
        rest.insert("object".into(), "chat.completion".into());
        rest.insert("created".into(), reelgate::ports::store::now_secs().into());
        rest.insert("model".into(), m.model_id.clone().into());
        Ok(Completion {
            choices: vec![CompletionChoice {
                index: 0,
                message,
                finish_reason: Some(finish_reason(output.stop_reason()).into()),
                rest: Map::new(),
            }],
            usage: output.usage().map(usage_json),
            rest,
        })
    }

    async fn stream(&self, request: ChatCompletionRequest) -> Result<ChunkStream, UpstreamError> {
        let request = request.to_json();
        let m = self.map(&request).await?;
        let output = send_retrying_connects(|| {
            self.client
                .converse_stream()
                .model_id(&m.model_id)
                .set_system(Some(m.system.clone()).filter(|s| !s.is_empty()))
                .set_messages(Some(m.messages.clone()))
                .inference_config(m.inference.clone())
                .set_tool_config(m.tools.clone())
                .set_additional_model_request_fields(m.additional.clone())
                .send()
        })
        .await?;
        struct St {
            events: aws_sdk_bedrockruntime::primitives::event_stream::EventReceiver<
                bt::ConverseStreamOutput,
                bt::error::ConverseStreamOutputError,
            >,
            model: String,
            /// Bedrock content-block index → OpenAI tool-call index.
            tool_index: HashMap<i32, usize>,
            done: bool,
        }
        let st = St {
            events: output.stream,
            model: m.model_id,
            tool_index: HashMap::new(),
            done: false,
        };
        let chunks = futures::stream::unfold(st, |mut st| async move {
            loop {
                if st.done {
                    return None;
                }
                let event = match st.events.recv().await {
                    Ok(Some(event)) => event,
                    Ok(None) => return None,
                    Err(e) => {
                        st.done = true;
                        return Some((Err(sdk_error(e)), st));
                    }
                };
                let chunk = |delta: Value, finish: Value| {
                    json!({
                        "id": "bedrock",
                        "object": "chat.completion.chunk",
                        "created": reelgate::ports::store::now_secs(),
                        "model": st.model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    })
                };
                let out = match event {
                    bt::ConverseStreamOutput::MessageStart(_) => {
                        chunk(json!({"role": "assistant", "content": ""}), Value::Null)
                    }
                    bt::ConverseStreamOutput::ContentBlockStart(start) => match start.start {
                        Some(bt::ContentBlockStart::ToolUse(t)) => {
                            let index = st.tool_index.len();
                            st.tool_index.insert(start.content_block_index, index);
                            chunk(
                                json!({"tool_calls": [{"index": index, "id": t.tool_use_id, "type": "function",
                                    "function": {"name": t.name, "arguments": ""}}]}),
                                Value::Null,
                            )
                        }
                        _ => continue,
                    },
                    bt::ConverseStreamOutput::ContentBlockDelta(d) => match d.delta {
                        Some(bt::ContentBlockDelta::Text(t)) => {
                            chunk(json!({"content": t}), Value::Null)
                        }
                        Some(bt::ContentBlockDelta::ToolUse(t)) => {
                            let index = st
                                .tool_index
                                .get(&d.content_block_index)
                                .copied()
                                .unwrap_or(0);
                            chunk(
                                json!({"tool_calls": [{"index": index, "function": {"arguments": t.input}}]}),
                                Value::Null,
                            )
                        }
                        Some(bt::ContentBlockDelta::ReasoningContent(
                            bt::ReasoningContentBlockDelta::Text(t),
                        )) => chunk(json!({"reasoning_content": t}), Value::Null),
                        Some(bt::ContentBlockDelta::ReasoningContent(
                            bt::ReasoningContentBlockDelta::Signature(sig),
                        )) => chunk(json!({ REASONING_SIGNATURE: sig }), Value::Null),
                        _ => continue,
                    },
                    bt::ConverseStreamOutput::MessageStop(s) => chunk(
                        json!({}),
                        Value::String(finish_reason(&s.stop_reason).into()),
                    ),
                    bt::ConverseStreamOutput::Metadata(meta) => match meta.usage {
                        Some(u) => json!({
                            "id": "bedrock",
                            "object": "chat.completion.chunk",
                            "created": reelgate::ports::store::now_secs(),
                            "model": st.model,
                            "choices": [],
                            "usage": usage_json(&u),
                        }),
                        None => continue,
                    },
                    _ => continue,
                };
                return Some((CompletionChunk::from_json(out), st));
            }
        });
        Ok(Box::pin(chunks))
    }

    /// Bedrock's CountTokens over the same Converse input (Claude models; for the others
    /// Bedrock refuses, and the caller estimates).
    async fn count_tokens(
        &self,
        request: ChatCompletionRequest,
    ) -> Result<Option<u64>, UpstreamError> {
        let request = request.to_json();
        let m = self.map(&request).await?;
        let converse = bt::ConverseTokensRequest::builder()
            .set_system(Some(m.system.clone()).filter(|s| !s.is_empty()))
            .set_messages(Some(m.messages.clone()))
            .set_tool_config(m.tools.clone())
            .set_additional_model_request_fields(m.additional.clone())
            .build();
        let output = send_retrying_connects(|| {
            self.client
                .count_tokens()
                .model_id(&m.model_id)
                .input(bt::CountTokensInput::Converse(converse.clone()))
                .send()
        })
        .await?;
        Ok(Some(output.input_tokens().max(0) as u64))
    }
}

/// Connects catalog upstreams of kind `bedrock`; hosts register it on their
/// [`reelgate::adapters::CatalogConnector`] (see [`crate::upstream_connector`]).
pub struct BedrockConnector;

#[async_trait]
impl reelgate::domain::chat::upstreams::UpstreamConnector for BedrockConnector {
    async fn connect(
        &self,
        config: &UpstreamConfig,
    ) -> Result<std::sync::Arc<dyn ChatUpstream>, UpstreamError> {
        Ok(std::sync::Arc::new(
            BedrockUpstream::from_config(config).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converse_usage_counts_cache_reads_and_writes_in_the_prompt() {
        let u = bt::TokenUsage::builder()
            .input_tokens(10)
            .output_tokens(5)
            .total_tokens(1515)
            .cache_read_input_tokens(1000)
            .cache_write_input_tokens(500)
            .build()
            .expect("usage");
        assert_eq!(
            usage_json(&u),
            json!({"prompt_tokens": 1510, "completion_tokens": 5, "total_tokens": 1515,
                   "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 500}})
        );
    }
}
