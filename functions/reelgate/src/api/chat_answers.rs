//! How a chat answer is written over HTTP, for `/v1/chat/completions`, the Messages API and the
//! console alike: the whole answer as JSON, or its stream as server-sent events written the
//! moment each chunk arrives (the body is a stream polled by hyper, with no buffering layer in
//! between), and the rate limits' headers on every answer made under them. OpenAI's dialect is
//! here; the use case and its metering are `domain::chat::complete` and `domain::chat::stream`.

use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::chat::body::{ChatCompletionBody, Unread};
use crate::domain::chat::complete::{ChatAnswer, Reply};
use crate::domain::chat::completion::{ChatCompletion, CompletionUsage};
use crate::domain::chat::dialect::{Dialect, StreamFormat};
use crate::domain::error::ApiResult;
use crate::ports::upstream::CompletionChunk;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::{json, Value};
use std::sync::Arc;
use utoipa::ToSchema;

/// Answers a chat completions request as `caller` (an API key's holder, or the console's
/// signed-in person) in OpenAI's dialect: `POST /v1/chat/completions` and the console's chat.
pub async fn complete(
    app: &App,
    caller: Caller,
    body: Result<ChatCompletionBody, Unread>,
    on_leave: crate::domain::chat::stream::OnLeave,
) -> ApiResult<Response> {
    let body = body.map_err(|unread| unread.refusal(&app.catalog))?;
    let mut v = crate::domain::chat::validate::validate(&app.catalog, body)?;
    v.on_leave = on_leave;
    let dialect = OpenAiChat {
        include_usage: v.include_usage,
    };
    let answer =
        crate::domain::chat::complete::complete(app.chat_ports(), caller, v, Arc::new(dialect))
            .await?;
    Ok(render(answer))
}

/// Renders a chat answer: JSON, or SSE for a stream; the limits' headers once admitted.
pub fn render(answer: ChatAnswer) -> Response {
    match answer {
        ChatAnswer::Limited(limited) => crate::api::rate_limits::refused(limited),
        ChatAnswer::Admitted { reply, status } => {
            let mut response = match reply {
                Ok(Reply::Whole { body, cost }) => {
                    let mut response = (
                        [(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/json"),
                        )],
                        body,
                    )
                        .into_response();
                    cost_header(cost, response.headers_mut());
                    response
                }
                Ok(Reply::Stream(events)) => EventStream(events).into_response(),
                Err(e) => e.into_response(),
            };
            crate::api::rate_limits::apply(&status, response.headers_mut());
            response
        }
    }
}

/// `x-reelgate-cost`: what a whole answer's charge took from the balance (a streamed answer says
/// it in its final usage instead: its headers go out before the charge).
pub fn cost_header(cost: Option<rust_decimal::Decimal>, headers: &mut axum::http::HeaderMap) {
    if let Some(v) = cost.and_then(|c| HeaderValue::from_str(&c.normalize().to_string()).ok()) {
        headers.insert(COST_HEADER, v);
    }
}

pub const COST_HEADER: &str = "x-reelgate-cost";

/// Server-sent events, written the moment each is ready: `data: {json}` lines separated by
/// blank lines (chat completions end with `data: [DONE]`; the Messages API and the responses
/// stream name each event with `event:`).
#[derive(ToSchema)]
#[schema(value_type = String)]
pub struct EventStream(pub BoxStream<'static, Bytes>);

impl IntoResponse for EventStream {
    fn into_response(self) -> Response {
        sse(self.0)
    }
}

fn sse(events: BoxStream<'static, Bytes>) -> Response {
    let body = events.map(Ok::<_, std::convert::Infallible>);
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Tells nginx-style proxies in front of the local server not to buffer the stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// One SSE `data:` event.
pub fn event(value: &impl serde::Serialize) -> Bytes {
    let mut out = b"data: ".to_vec();
    // Cannot fail: every map key is a string and every value serializes.
    let _ = serde_json::to_writer(&mut out, value);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// reelgate's extensions of the internal chat shape (`ports::upstream::extension`) are for the
/// gateway's own dialects, never for an OpenAI caller.
fn is_extension(key: &str) -> bool {
    key.starts_with("reelgate_")
}

/// OpenAI's chat completions, as `/v1/chat/completions` and the console answer.
pub struct OpenAiChat {
    /// `stream_options.include_usage`: every chunk carries `usage: null` and a last chunk
    /// with `choices: []` carries the usage.
    pub include_usage: bool,
}

impl Dialect for OpenAiChat {
    fn new_id(&self) -> String {
        crate::domain::chat::new_completion_id()
    }

    fn whole(&self, mut completion: ChatCompletion) -> ApiResult<Bytes> {
        completion.rest.retain(|k, _| !is_extension(k));
        for choice in &mut completion.choices {
            choice.message.rest.retain(|k, _| !is_extension(k));
        }
        crate::domain::chat::dialect::json(&completion)
    }

    fn stream_format(&self, id: &str, model: &str, created: i64) -> Box<dyn StreamFormat> {
        Box::new(OpenAiChunks {
            include_usage: self.include_usage,
            id: id.to_owned(),
            model: model.to_owned(),
            created,
        })
    }
}

struct OpenAiChunks {
    include_usage: bool,
    id: String,
    model: String,
    created: i64,
}

impl StreamFormat for OpenAiChunks {
    fn chunk(&mut self, mut chunk: CompletionChunk) -> Vec<Bytes> {
        chunk.rest.retain(|k, _| !is_extension(k));
        for choice in &mut chunk.choices {
            choice.delta.rest.retain(|k, _| !is_extension(k));
        }
        if self.include_usage {
            chunk.usage = Some(Value::Null);
        }
        vec![event(&chunk)]
    }

    fn end(&mut self, usage: CompletionUsage) -> Vec<Bytes> {
        let mut out = Vec::new();
        if self.include_usage {
            out.push(event(&json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [],
                "usage": usage,
            })));
        }
        out.push(Bytes::from_static(b"data: [DONE]\n\n"));
        out
    }

    fn fail(&mut self, error: &crate::domain::error::ApiError) -> Vec<Bytes> {
        // Headers are gone already, so the failure travels as an error event (as OpenAI sends
        // one); the OpenAI SDKs raise it. No `[DONE]`: the completion did not complete.
        vec![event(&crate::api::envelope::error_body(error))]
    }
}
