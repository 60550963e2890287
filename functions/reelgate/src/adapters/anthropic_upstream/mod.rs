//! Anthropic's Messages API as a chat upstream (catalog kind `anthropic`): `POST
//! {base}/v1/messages` and `{base}/v1/messages/count_tokens` with `x-api-key` and
//! `anthropic-version`.
//!
//! Two ways in. A Messages request whose model only Anthropic serves carries the caller's own
//! body ([`ANTHROPIC_REQUEST`]); it is sent as it came, with the upstream's model name, so
//! thinking signatures, `redacted_thinking`, `cache_control` with its TTLs, citations and server
//! tools survive. Its answer comes back twice: translated to chat (which the meter and the
//! other dialects read) and as it was written ([`ANTHROPIC_MESSAGE`], [`ANTHROPIC_EVENT`]),
//! which the Messages dialect relays. Every other request (chat completions, Responses, and
//! Messages to a model with other deployments too) is translated from chat, as the Converse
//! adapter translates it: system messages → `system` blocks, user parts → text, image and
//! document blocks (fetched through the guarded fetcher and inlined, so a presigned URL of ours
//! works and Anthropic never sees it), assistant tool calls → `tool_use` after the signed
//! reasoning blocks they came with, `tool` messages → `tool_result` in a user turn, cache
//! points → `cache_control` on the block they follow, `reasoning_effort` → a thinking budget.
//!
//! Like the OpenAI-compatible adapter, only failures to connect are retried: a request that
//! reached Anthropic may have run (and been billed) already.
//!
//! The translation of a chat request is `request.rs`; reading Anthropic's answers and stream
//! events back as chat's is `answer.rs`.

mod answer;
mod request;

use crate::adapters::openai_upstream::{
    read_json, send_retrying_connects, transport_error, SseParser, COMPLETION_TIMEOUT,
    CONNECT_TIMEOUT, STREAM_IDLE_TIMEOUT,
};
use crate::domain::catalog::UpstreamConfig;
use crate::ports::upstream::extension::ANTHROPIC_REQUEST;
use crate::ports::upstream::{
    ChatCompletionRequest, ChatUpstream, ChunkStream, Completion, CompletionChunk, UpstreamError,
};
use answer::{completion, stream_error, StreamState};
use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The API version every request names: the one whose shapes this adapter writes and reads
/// (a caller's own `anthropic-version` is not forwarded).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The members of a Messages body that count_tokens takes (it refuses the sampling ones).
const COUNT_TOKENS_FIELDS: &[&str] = &[
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "mcp_servers",
];

pub struct AnthropicUpstream {
    client: reqwest::Client,
    base: String,
    messages_url: reqwest::Url,
    count_tokens_url: reqwest::Url,
    fetcher: Arc<dyn crate::ports::fetch::Fetcher>,
}

impl AnthropicUpstream {
    /// From the catalog: `base_url` (default `https://api.anthropic.com`, `${NAME}` expanded),
    /// the key from the environment variable `api_key_env`, and `extra_headers` (an
    /// `anthropic-beta` list, say).
    pub fn from_config(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let base = config
            .base_url
            .as_deref()
            .map(crate::config::expand_env)
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let api_key = config
            .api_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok())
            .filter(|k| !k.is_empty());
        Self::new(
            &base,
            api_key,
            crate::adapters::openai_upstream::extra_headers(config)?,
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default()),
        )
    }

    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        mut headers: HeaderMap,
        fetcher: Arc<dyn crate::ports::fetch::Fetcher>,
    ) -> Result<Self, UpstreamError> {
        let base = base_url.trim().trim_end_matches('/').to_owned();
        // A base that already ends in the version path is taken as the API root.
        let root = base.strip_suffix("/v1").unwrap_or(&base).to_owned();
        let url = |path: &str| {
            reqwest::Url::parse(&format!("{root}{path}")).map_err(|e| {
                UpstreamError::Protocol(format!("the upstream base URL {base} is not a URL: {e}"))
            })
        };
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(&key).map_err(|_| {
                UpstreamError::Protocol("the Anthropic key is not a valid header value".into())
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .default_headers(headers)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| UpstreamError::Protocol(format!("cannot build an HTTP client: {e}")))?;
        Ok(AnthropicUpstream {
            client,
            messages_url: url("/v1/messages")?,
            count_tokens_url: url("/v1/messages/count_tokens")?,
            base,
            fetcher,
        })
    }

    /// The Messages body for `request`: the caller's own when it carries one, else the
    /// translation of the chat body. `native` says which.
    async fn body(&self, request: &Value) -> Result<(Value, bool), UpstreamError> {
        let model = request["model"].clone();
        if let Some(own) = request.get(ANTHROPIC_REQUEST).filter(|v| v.is_object()) {
            let mut body = own.clone();
            body["model"] = model;
            return Ok((body, true));
        }
        Ok((
            request::translate(self.fetcher.as_ref(), request).await?,
            false,
        ))
    }

    async fn post(
        &self,
        url: &reqwest::Url,
        body: &Value,
        stream: bool,
    ) -> Result<reqwest::Response, UpstreamError> {
        send_retrying_connects(&self.base, || {
            let builder = self.client.post(url.clone()).json(body);
            if stream {
                builder.header(reqwest::header::ACCEPT, "text/event-stream")
            } else {
                builder.timeout(COMPLETION_TIMEOUT)
            }
        })
        .await
    }
}

#[async_trait]
impl ChatUpstream for AnthropicUpstream {
    async fn complete(&self, request: ChatCompletionRequest) -> Result<Completion, UpstreamError> {
        let request = request.to_json();
        let (mut body, native) = self.body(&request).await?;
        body["stream"] = false.into();
        let response = self.post(&self.messages_url, &body, false).await?;
        let message = read_json(response).await?;
        if message["type"] == "error" {
            return Err(stream_error(&message["error"]));
        }
        if !message["content"].is_array() {
            return Err(UpstreamError::Protocol("the message has no content".into()));
        }
        Completion::from_json(completion(&message, native))
    }

    async fn stream(&self, request: ChatCompletionRequest) -> Result<ChunkStream, UpstreamError> {
        let request = request.to_json();
        let (mut body, native) = self.body(&request).await?;
        body["stream"] = true.into();
        let response = self.post(&self.messages_url, &body, true).await?;
        struct St<S> {
            bytes: std::pin::Pin<Box<S>>,
            parser: SseParser,
            ready: VecDeque<Value>,
            state: StreamState,
            stopped: bool,
            done: bool,
        }
        let st = St {
            bytes: Box::pin(response.bytes_stream()),
            parser: SseParser::default(),
            ready: VecDeque::new(),
            state: StreamState {
                native,
                id: Value::Null,
                model: request["model"].clone(),
                tool_index: HashMap::new(),
                usage: Map::new(),
            },
            stopped: false,
            done: false,
        };
        let chunks = futures::stream::unfold(st, |mut st| async move {
            loop {
                if let Some(chunk) = st.ready.pop_front() {
                    let chunk = CompletionChunk::from_json(chunk);
                    if chunk.is_err() {
                        st.done = true;
                        st.ready.clear();
                    }
                    return Some((chunk, st));
                }
                if st.done || st.stopped {
                    return None;
                }
                let bytes = match tokio::time::timeout(STREAM_IDLE_TIMEOUT, st.bytes.next()).await {
                    Err(_) => {
                        st.done = true;
                        let e = UpstreamError::Rejected {
                            status: 504,
                            code: Some("timeout".into()),
                            message: "the stream went silent".into(),
                            retry_after: None,
                        };
                        return Some((Err(e), st));
                    }
                    Ok(Some(Ok(bytes))) => bytes,
                    Ok(Some(Err(e))) => {
                        st.done = true;
                        return Some((Err(transport_error(e)), st));
                    }
                    Ok(None) => {
                        st.done = true;
                        let e = UpstreamError::Unreachable(
                            "the stream ended before message_stop".into(),
                        );
                        return Some((Err(e), st));
                    }
                };
                for data in st.parser.push(&bytes) {
                    let parsed = serde_json::from_str::<Value>(&data)
                        .map_err(|e| {
                            UpstreamError::Protocol(format!("a stream event is not JSON: {e}"))
                        })
                        .and_then(|event| {
                            let stop = event["type"] == "message_stop";
                            st.state.event(event).map(|chunks| (chunks, stop))
                        });
                    match parsed {
                        Ok((chunks, stop)) => {
                            st.ready.extend(chunks);
                            if stop {
                                st.stopped = true;
                                break;
                            }
                        }
                        Err(e) => {
                            st.done = true;
                            st.ready.clear();
                            return Some((Err(e), st));
                        }
                    }
                }
            }
        });
        Ok(chunks.boxed())
    }

    async fn count_tokens(
        &self,
        request: ChatCompletionRequest,
    ) -> Result<Option<u64>, UpstreamError> {
        let request = request.to_json();
        let (body, _) = self.body(&request).await?;
        let body: Map<String, Value> = body
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| COUNT_TOKENS_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let response = self
            .post(&self.count_tokens_url, &Value::Object(body), false)
            .await?;
        let counted = read_json(response).await?;
        counted["input_tokens"]
            .as_u64()
            .map(Some)
            .ok_or_else(|| UpstreamError::Protocol("the count has no input_tokens".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::answer::usage_json;
    use super::request::{assistant_blocks, mark, thinking_budget};
    use super::*;
    use crate::ports::upstream::extension::{ANTHROPIC_EVENT, REASONING_BLOCKS, THINKING_BUDGET};
    use crate::ports::upstream::CacheTtl;
    use crate::ports::upstream::{CacheAnchor, CachePoint};
    use serde_json::json;

    #[test]
    fn cache_points_become_cache_control_on_the_block_they_follow() {
        let mut blocks = vec![
            json!({"type": "thinking", "thinking": "t", "signature": "s"}),
            json!({"type": "text", "text": "a"}),
            json!({"type": "tool_use", "id": "x", "name": "f", "input": {}}),
        ];
        let whole = CachePoint {
            anchor: CacheAnchor::Message {
                index: 0,
                part: None,
            },
            ttl: Some(CacheTtl::OneHour),
        };
        mark(&mut blocks, &[&whole], false);
        assert_eq!(
            blocks[2]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert!(blocks[0].get("cache_control").is_none());
        let mut thinking_only = vec![json!({"type": "thinking", "thinking": "t"})];
        mark(&mut thinking_only, &[&whole], false);
        assert!(thinking_only[0].get("cache_control").is_none());
        let mut parts = vec![
            json!({"type": "text", "text": "a"}),
            json!({"type": "text", "text": "b"}),
        ];
        let first = CachePoint {
            anchor: CacheAnchor::Message {
                index: 0,
                part: Some(0),
            },
            ttl: None,
        };
        mark(&mut parts, &[&first], true);
        assert_eq!(parts[0]["cache_control"], json!({"type": "ephemeral"}));
        assert!(parts[1].get("cache_control").is_none());
    }

    #[test]
    fn usage_counts_cache_reads_and_writes_in_the_prompt() {
        let u = usage_json(&json!({"input_tokens": 10, "output_tokens": 5,
            "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}));
        assert_eq!(u["prompt_tokens"], 1210);
        assert_eq!(u["total_tokens"], 1215);
        assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 1000);
        assert_eq!(u["prompt_tokens_details"]["cache_write_tokens"], 200);
    }

    #[test]
    fn a_native_stream_gives_every_event_a_chunk_and_ends_with_the_usage() {
        let mut st = StreamState {
            native: true,
            id: Value::Null,
            model: json!("claude"),
            tool_index: HashMap::new(),
            usage: Map::new(),
        };
        let start = st
            .event(json!({"type": "message_start", "message": {"id": "msg_1",
                "model": "claude-x", "usage": {"input_tokens": 7, "output_tokens": 1,
                "cache_read_input_tokens": 2048}}}))
            .unwrap();
        assert_eq!(start[0][ANTHROPIC_EVENT]["event"], "message_start");
        let ping = st.event(json!({"type": "ping"})).unwrap();
        assert_eq!(ping.len(), 1, "a native ping still reaches the relay");
        let tool = st
            .event(json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}))
            .unwrap();
        assert_eq!(tool[0]["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
        let args = st
            .event(json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "{\"a\""}}))
            .unwrap();
        assert_eq!(
            args[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
            "{\"a\""
        );
        st.event(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 42}}),
        )
        .unwrap();
        let stop = st.event(json!({"type": "message_stop"})).unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[1]["usage"]["prompt_tokens"], 2055);
        assert_eq!(stop[1]["usage"]["completion_tokens"], 42);
        assert_eq!(stop[1]["id"], "msg_1");
    }

    #[test]
    fn a_translated_stream_skips_events_with_nothing_to_say_and_raises_errors() {
        let mut st = StreamState {
            native: false,
            id: Value::Null,
            model: json!("claude"),
            tool_index: HashMap::new(),
            usage: Map::new(),
        };
        assert!(st.event(json!({"type": "ping"})).unwrap().is_empty());
        let err = st
            .event(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
            )
            .unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
    }

    #[test]
    fn reasoning_blocks_go_back_first_and_redacted_ones_stay_as_they_came() {
        let m = json!({"role": "assistant", "content": "done",
            REASONING_BLOCKS: [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"}],
            "tool_calls": [{"id": "toolu_1", "type": "function",
                "function": {"name": "f", "arguments": "{\"x\":1}"}}]});
        let blocks = assistant_blocks(&m);
        let kinds: Vec<_> = blocks.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["thinking", "redacted_thinking", "text", "tool_use"]);
        assert_eq!(blocks[1]["data"], "opaque");
        assert_eq!(blocks[3]["input"], json!({"x": 1}));
    }

    #[test]
    fn a_thinking_budget_stays_below_max_tokens() {
        let thinking = |request: Value| thinking_budget(&request);
        assert_eq!(thinking(json!({"reasoning_effort": "low"})), Some(1024));
        assert_eq!(
            thinking(json!({"reasoning_effort": "high", THINKING_BUDGET: 3000})),
            Some(3000)
        );
        assert_eq!(thinking(json!({})), None);
    }
}
