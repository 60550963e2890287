//! An OpenAI-compatible HTTP upstream: OpenAI itself, vLLM, llama.cpp's server, Ollama, or
//! anything else that serves `POST {base}/chat/completions` and `GET {base}/models`.
//!
//! Only failures to connect are retried (with backoff): nothing reached the upstream, so a retry
//! cannot run a completion twice. Any other failure — an error status, a timeout, a connection
//! that breaks after the request was sent — is reported at once, because the upstream may have
//! started (and billed) the work.

use crate::domain::catalog::UpstreamConfig;
use crate::ports::upstream::{
    ChatCompletionRequest, ChatUpstream, ChunkStream, Completion, CompletionChunk, UpstreamError,
};
use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::Value;
use std::collections::VecDeque;
use std::time::Duration;

/// Connect attempts after the first, with the backoff doubling from `RETRY_BASE`.
const CONNECT_RETRIES: u32 = 3;
const RETRY_BASE: Duration = Duration::from_millis(100);
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A non-streamed completion may think for a long time; past this the caller gets a 504.
pub(crate) const COMPLETION_TIMEOUT: Duration = Duration::from_secs(600);
/// A stream that sends nothing for this long is treated as dead.
pub(crate) const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

pub struct OpenAiUpstream {
    client: reqwest::Client,
    base: String,
    /// `{base}/chat/completions`, parsed once: every request posts to it.
    completions_url: reqwest::Url,
    api_key: Option<String>,
}

/// The API root for a configured base URL: a bare origin (`http://host:8000`) gets OpenAI's
/// `/v1`; a URL with a path (`https://api.openai.com/v1`, `.../v1beta/openai`) is used as given.
pub fn api_base(base_url: &str) -> String {
    let trimmed = base_url.trim().trim_end_matches('/');
    let has_path = url::Url::parse(trimmed)
        .map(|u| !matches!(u.path(), "" | "/"))
        .unwrap_or(false);
    if has_path {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1")
    }
}

impl OpenAiUpstream {
    pub fn new(base_url: &str, api_key: Option<String>) -> Result<Self, UpstreamError> {
        Self::with_headers(base_url, api_key, HeaderMap::new())
    }

    fn with_headers(
        base_url: &str,
        api_key: Option<String>,
        headers: HeaderMap,
    ) -> Result<Self, UpstreamError> {
        let base = api_base(base_url);
        let completions_url =
            url::Url::parse(&format!("{base}/chat/completions")).map_err(|e| {
                UpstreamError::Protocol(format!("the upstream base URL {base} is not a URL: {e}"))
            })?;
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .default_headers(headers)
            // Chunks must be forwarded as they come; keep-alive pools connections across calls.
            .tcp_nodelay(true)
            .build()
            .map_err(|e| UpstreamError::Protocol(format!("cannot build an HTTP client: {e}")))?;
        Ok(OpenAiUpstream {
            client,
            base,
            completions_url,
            api_key: api_key.filter(|k| !k.is_empty()),
        })
    }

    /// From the catalog: `base_url` (with `${NAME}` expanded), the key from the environment
    /// variable `api_key_env`, and `extra_headers`.
    pub fn from_config(config: &UpstreamConfig) -> Result<Self, UpstreamError> {
        let base_url = config
            .base_url
            .as_deref()
            .map(crate::config::expand_env)
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                UpstreamError::Protocol(format!("upstream {} has no base_url", config.id))
            })?;
        let api_key = config
            .api_key_env
            .as_deref()
            .and_then(|name| std::env::var(name).ok());
        Self::with_headers(&base_url, api_key, extra_headers(config)?)
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Model ids the upstream lists at `GET {base}/models`.
    pub async fn list_models(&self) -> Result<Vec<String>, UpstreamError> {
        let url = format!("{}/models", self.base);
        let response = self
            .send(|| {
                self.authorized(self.client.get(&url))
                    .timeout(Duration::from_secs(30))
            })
            .await?;
        let body: Value = read_json(response).await?;
        let data = body
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| UpstreamError::Protocol("the model list has no data array".into()))?;
        Ok(data
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
            .collect())
    }

    fn authorized(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(key) => builder.header(AUTHORIZATION, format!("Bearer {key}")),
            None => builder,
        }
    }

    async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, UpstreamError> {
        send_retrying_connects(&self.base, build).await
    }
}

/// The catalog's `extra_headers` of an upstream, each value with `${NAME}` expanded.
pub(crate) fn extra_headers(config: &UpstreamConfig) -> Result<HeaderMap, UpstreamError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &config.extra_headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| UpstreamError::Protocol(format!("bad header name {name}: {e}")))?;
        let value = HeaderValue::from_str(&crate::config::expand_env(value))
            .map_err(|e| UpstreamError::Protocol(format!("bad value for header {name}: {e}")))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Sends the request, retrying only when the connection could not be made; an error status
/// becomes `Rejected` with the upstream's own message. `base` names the upstream in the logs.
pub(crate) async fn send_retrying_connects(
    base: &str,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, UpstreamError> {
    let mut attempt = 0;
    let response = loop {
        match build().send().await {
            Ok(response) => break response,
            Err(e) if e.is_connect() && attempt < CONNECT_RETRIES => {
                let delay = RETRY_BASE * 2u32.pow(attempt);
                tracing::warn!(error = %e, attempt, ?delay, %base, "upstream connect failed; retrying");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(e) => return Err(transport_error(e)),
        }
    };
    if response.status().is_success() {
        return Ok(response);
    }
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(retry_after_secs);
    let text = response.text().await.unwrap_or_default();
    Err(match rejected(status, &text) {
        UpstreamError::Rejected {
            status,
            code,
            message,
            ..
        } => UpstreamError::Rejected {
            status,
            code,
            message,
            retry_after,
        },
        other => other,
    })
}

/// Turns a reqwest failure into the port's error: timeouts are 504-shaped so the gateway
/// answers `upstream_timeout`; everything else means the upstream could not be reached or the
/// connection broke.
pub(crate) fn transport_error(e: reqwest::Error) -> UpstreamError {
    // Without the URL: the upstream's address is the operator's, not the caller's to see.
    let e = e.without_url();
    if e.is_timeout() {
        UpstreamError::Rejected {
            status: 504,
            code: Some("timeout".into()),
            message: e.to_string(),
            retry_after: None,
        }
    } else {
        UpstreamError::Unreachable(e.to_string())
    }
}

/// `Retry-After` as seconds from now: either delay-seconds or an HTTP date (RFC 9110).
fn retry_after_secs(value: &str) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .map_or(0, |d| d.as_secs()),
    )
}

/// An error status with OpenAI's envelope (or Anthropic's, whose `error.type` is the code) when
/// the upstream sends one, else its text.
pub(crate) fn rejected(status: u16, text: &str) -> UpstreamError {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error
        .and_then(|e| {
            e.get("message")
                .and_then(Value::as_str)
                .or_else(|| e.as_str())
        })
        .map(str::to_owned)
        .unwrap_or_else(|| text.chars().take(500).collect());
    let code = error
        .and_then(|e| e.get("code").or_else(|| e.get("type")))
        .and_then(|c| {
            c.as_str()
                .map(str::to_owned)
                .or_else(|| c.as_i64().map(|n| n.to_string()))
        });
    UpstreamError::Rejected {
        status,
        code,
        message,
        retry_after: None,
    }
}

pub(crate) async fn read_json(response: reqwest::Response) -> Result<Value, UpstreamError> {
    read_body(response, "the reply is not JSON").await
}

/// The response's body read as `T`, or the protocol error that says it is `not` one.
async fn read_body<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
    not: &str,
) -> Result<T, UpstreamError> {
    let bytes = response.bytes().await.map_err(transport_error)?;
    serde_json::from_slice(&bytes).map_err(|e| UpstreamError::Protocol(format!("{not}: {e}")))
}

#[async_trait]
impl ChatUpstream for OpenAiUpstream {
    async fn complete(&self, request: ChatCompletionRequest) -> Result<Completion, UpstreamError> {
        let request = ChatCompletionRequest {
            stream: Some(false),
            stream_options: None,
            ..request.without_extensions()
        };
        let response = self
            .send(|| {
                self.authorized(self.client.post(self.completions_url.clone()))
                    .timeout(COMPLETION_TIMEOUT)
                    .json(&request)
            })
            .await?;
        read_body(response, "the answer is not a chat.completion").await
    }

    async fn stream(&self, request: ChatCompletionRequest) -> Result<ChunkStream, UpstreamError> {
        let request = ChatCompletionRequest {
            stream: Some(true),
            ..request.without_extensions()
        };
        let response = self
            .send(|| {
                self.authorized(self.client.post(self.completions_url.clone()))
                    .header(reqwest::header::ACCEPT, "text/event-stream")
                    .json(&request)
            })
            .await?;
        Ok(sse_chunks(response.bytes_stream()).boxed())
    }
}

/// Parses an SSE byte stream into JSON chunks, yielding each one as soon as its event is
/// complete. `data: [DONE]` ends the stream; an `{"error": …}` event becomes an error.
/// Dropping the returned stream drops the response and so closes the upstream connection.
pub fn sse_chunks<S>(
    bytes: S,
) -> impl Stream<Item = Result<CompletionChunk, UpstreamError>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    struct State<S> {
        bytes: std::pin::Pin<Box<S>>,
        parser: SseParser,
        ready: VecDeque<String>,
        ended: bool,
        done: bool,
    }
    let state = State {
        bytes: Box::pin(bytes),
        parser: SseParser::default(),
        ready: VecDeque::new(),
        ended: false,
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            if let Some(data) = st.ready.pop_front() {
                if data.trim() == "[DONE]" {
                    // Read the body's end (normally already there) so that the connection goes
                    // back to the pool instead of being closed; bounded, in case it never ends.
                    let drain = async { while let Some(Ok(_)) = st.bytes.next().await {} };
                    let _ = tokio::time::timeout(Duration::from_millis(250), drain).await;
                    return None;
                }
                let item = match serde_json::from_str::<CompletionChunk>(&data) {
                    Ok(chunk) => match chunk.rest.get("error").filter(|e| !e.is_null()) {
                        Some(error) => {
                            st.done = true;
                            let status =
                                error.get("code").and_then(Value::as_u64).unwrap_or(502) as u16;
                            Err(rejected(status, &data))
                        }
                        None => Ok(chunk),
                    },
                    Err(e) => {
                        st.done = true;
                        Err(UpstreamError::Protocol(format!(
                            "a stream event is not a chat.completion.chunk: {e}"
                        )))
                    }
                };
                return Some((item, st));
            }
            if st.ended {
                return None;
            }
            match tokio::time::timeout(STREAM_IDLE_TIMEOUT, st.bytes.next()).await {
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
                Ok(Some(Ok(chunk))) => {
                    let events = st.parser.push(&chunk);
                    st.ready.extend(events);
                }
                Ok(Some(Err(e))) => {
                    st.done = true;
                    return Some((Err(transport_error(e)), st));
                }
                // The upstream closed without `[DONE]` (llama.cpp and some proxies do): deliver
                // what is framed, then end cleanly.
                Ok(None) => {
                    let rest = st.parser.finish();
                    st.ready.extend(rest);
                    st.ended = true;
                }
            }
        }
    })
}

/// Incremental SSE framing: bytes in, the `data` of each complete event out.
#[derive(Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Vec<String>,
}

impl SseParser {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
            // Other fields (`event:`, `id:`, `retry:`) and `:` comments carry nothing we use.
        }
        events
    }

    /// The event left when the stream ends without a final blank line.
    pub fn finish(&mut self) -> Vec<String> {
        let mut events = self.push(b"\n\n");
        self.buf.clear();
        if !self.data.is_empty() {
            events.push(self.data.join("\n"));
            self.data.clear();
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_base_adds_v1_only_to_a_bare_origin() {
        assert_eq!(
            api_base("http://127.0.0.1:8000"),
            "http://127.0.0.1:8000/v1"
        );
        assert_eq!(
            api_base("http://127.0.0.1:8000/"),
            "http://127.0.0.1:8000/v1"
        );
        assert_eq!(
            api_base("https://api.openai.com/v1/"),
            "https://api.openai.com/v1"
        );
        assert_eq!(
            api_base("https://x.test/v1beta/openai"),
            "https://x.test/v1beta/openai"
        );
    }

    #[test]
    fn sse_parser_frames_split_events() {
        let mut p = SseParser::default();
        assert!(p.push(b"data: {\"a\"").is_empty());
        assert_eq!(
            p.push(b":1}\r\n\r\n: comment\n\ndata: [DONE]\n"),
            vec!["{\"a\":1}".to_owned()]
        );
        assert_eq!(p.finish(), vec!["[DONE]".to_owned()]);
    }
}
