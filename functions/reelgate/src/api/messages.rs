//! The Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) for Anthropic's
//! clients. The use cases (`domain::messages::create`) translate a request into a chat request
//! and run it through the chat use case itself ([`crate::domain::chat::complete::complete`]): the same
//! admission, rate limits, budgets, routing, fallback, usage rows and ledger. Only the answer
//! differs, written by the [`Anthropic`] dialect (`domain::messages::reply`).
//!
//! At this edge ([`edge`]) a key may come as `x-api-key` (Anthropic's header) as well as
//! `Authorization: Bearer`, and every error answer is rewritten into Anthropic's envelope
//! `{"type": "error", "error": {"type", "message"}, "request_id"}` with its status codes.

use crate::api::extract::ApiBody;
use crate::api::operation::{self, schema, Answer, Declared, Operation, DEFAULT};
use crate::app::App;
use crate::domain::accounts::Caller;
use crate::domain::chat::completion::{ChatCompletion, CompletionUsage};
use crate::domain::chat::dialect::{Dialect, StreamFormat};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::messages::body::{MessageCountTokensRequest, MessageCreateRequest};
use crate::domain::messages::reply::{self, StreamTranslator};
use crate::ports::upstream::completion::AnthropicEvent;
use crate::ports::upstream::{extension, CompletionChunk};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;
use utoipa::ToSchema;

pub const CREATE_MESSAGE: Operation = Operation {
    method: "POST",
    path: "/v1/messages",
    id: "CreateMessage",
    tag: "messages",
    summary: "A message in Anthropic's Messages API shape (Anthropic's server-sent events with `stream: true`; the key also as `x-api-key`; errors in Anthropic's envelope; docs/messages.md)",
    body: operation::Body::Json(schema::<crate::domain::messages::body::MessageCreateRequest>),
    ok: &[(200, Answer::JsonOrStream(schema::<crate::domain::messages::reply::Message>))],
    errors: &[400, 401, 402, 404, 413, 429, 502, 504, 529],
    ..DEFAULT
};

pub const COUNT_MESSAGE_TOKENS: Operation = Operation {
    method: "POST",
    path: "/v1/messages/count_tokens",
    id: "CountMessageTokens",
    tag: "messages",
    summary: "The estimated input tokens of a Messages API request, admitted as a message is \
              (a funded organization, the key's budget, the rate limits) and not billed \
              (docs/messages.md)",
    body: operation::Body::Json(schema::<crate::domain::messages::body::MessageCountTokensRequest>),
    ok: &[(
        200,
        Answer::Json(schema::<crate::domain::messages::reply::MessageTokensCount>),
    )],
    errors: &[400, 401, 402, 404, 413, 429],
    ..DEFAULT
};

pub fn routes() -> Router<App> {
    Router::new()
        .merge(messages_route())
        .merge(count_tokens_route())
}

// One function per path (the unit a Lambda function serves, `api::PathRoutes`).

pub fn messages_route() -> Router<App> {
    Router::new()
        .declared(&CREATE_MESSAGE, create)
        .route_layer(axum::middleware::from_fn(edge))
}

pub fn count_tokens_route() -> Router<App> {
    Router::new()
        .declared(&COUNT_MESSAGE_TOKENS, count_tokens)
        .route_layer(axum::middleware::from_fn(edge))
}

/// Largest error body rewritten into Anthropic's envelope (ours are a few hundred bytes).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The Messages API's edge: `x-api-key` as the key, and Anthropic's error envelope.
pub async fn edge(mut req: Request, next: Next) -> Response {
    let headers = req.headers_mut();
    if let Some(key) = headers.get("x-api-key").cloned() {
        let bearer = HeaderValue::from_bytes(&[b"Bearer ", key.as_bytes()].concat());
        match (headers.get(header::AUTHORIZATION), bearer) {
            (None, Ok(bearer)) => {
                headers.insert(header::AUTHORIZATION, bearer);
            }
            (Some(given), Ok(bearer)) if *given == bearer => {}
            // Two different keys: which one to bill is not ours to guess.
            _ => {
                return anthropic(
                    ApiError::unauthorized(
                        "ambiguous_api_key",
                        "x-api-key and Authorization name different keys; send one.",
                    )
                    .into_response(),
                )
                .await
            }
        }
    }
    let response = next.run(req).await;
    anthropic(response).await
}

/// Anthropic's error `type` and status for one of our statuses.
pub fn error_type(status: StatusCode) -> (&'static str, StatusCode) {
    match status.as_u16() {
        401 => ("authentication_error", status),
        402 => ("billing_error", status),
        403 => ("permission_error", status),
        404 => ("not_found_error", status),
        413 => ("request_too_large", status),
        429 => ("rate_limit_error", status),
        // Anthropic's "overloaded" status; its SDKs retry it.
        503 => (
            "overloaded_error",
            StatusCode::from_u16(529).unwrap_or(status),
        ),
        504 => ("timeout_error", status),
        s if s >= 500 => ("api_error", status),
        _ => ("invalid_request_error", status),
    }
}

/// Anthropic's error envelope, the body of every non-2xx answer of the Messages API's routes
/// (and the data of a stream's `error` event).
#[derive(Debug, Serialize, ToSchema)]
pub struct AnthropicErrorResponse {
    #[serde(rename = "type")]
    #[schema(value_type = String, pattern = "^error$")]
    pub kind: &'static str,
    pub error: AnthropicErrorBody,
    /// The request's id (also in the `request-id` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AnthropicErrorBody {
    /// `invalid_request_error`, `authentication_error`, `billing_error`, `permission_error`,
    /// `not_found_error`, `request_too_large`, `rate_limit_error`, `api_error`,
    /// `timeout_error`, `overloaded_error`.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    pub message: String,
}

/// The Anthropic envelope of an error: its type and our message (with our `code` for support).
fn envelope(status: StatusCode, message: &str) -> (StatusCode, AnthropicErrorResponse) {
    let (kind, status) = error_type(status);
    let body = AnthropicErrorResponse {
        kind: "error",
        error: AnthropicErrorBody {
            kind,
            message: message.to_owned(),
        },
        request_id: crate::domain::error::current_request_id(),
    };
    (status, body)
}

/// Rewrites an error answer (OpenAI's envelope, from any layer inside the route) into
/// Anthropic's; every other answer passes untouched, streams included.
async fn anthropic(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return with_request_id_header(response);
    }
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_ERROR_BODY)
        .await
        .unwrap_or_default();
    let openai: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let message = openai["error"]["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
    let message = match openai["error"]["code"].as_str() {
        Some(code) if !message.contains(code) => format!("{message} ({code})"),
        _ => message,
    };
    let (status, body) = envelope(status, &message);
    parts.status = status;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = serde_json::to_vec(&body).unwrap_or_default();
    with_request_id_header(Response::from_parts(parts, Body::from(body)))
}

/// Anthropic's clients read the request id from `request-id`.
fn with_request_id_header(mut response: Response) -> Response {
    if let Some(id) = response
        .headers()
        .get(crate::api::request_id::HEADER)
        .cloned()
        .or_else(|| {
            crate::domain::error::current_request_id()
                .and_then(|id| HeaderValue::from_str(&id).ok())
        })
    {
        response.headers_mut().insert("request-id", id);
    }
    response
}

/// The Messages API as a dialect of the chat use case.
struct Anthropic {
    stop_sequences: Vec<String>,
}

impl Dialect for Anthropic {
    fn new_id(&self) -> String {
        crate::domain::messages::new_message_id()
    }

    fn whole(&self, completion: ChatCompletion) -> ApiResult<Bytes> {
        match reply::native_message(&completion) {
            Some(native) => crate::domain::chat::dialect::json(&native),
            None => crate::domain::chat::dialect::json(&reply::message(
                &completion,
                &self.stop_sequences,
            )),
        }
    }

    fn stream_format(&self, id: &str, model: &str, _created: i64) -> Box<dyn StreamFormat> {
        Box::new(Events {
            translator: StreamTranslator::new(id, model, self.stop_sequences.clone()),
            id: id.to_owned(),
            model: model.to_owned(),
            mode: Mode::NotStarted,
        })
    }
}

/// Anthropic's SSE: `event: <type>` and its data, per event. Whether the events are translated
/// from chat chunks or relayed from a native Anthropic upstream is known at the first chunk,
/// so `message_start` waits for it.
struct Events {
    translator: StreamTranslator,
    id: String,
    model: String,
    mode: Mode,
}

enum Mode {
    NotStarted,
    Translated,
    Native(reply::NativeRelay),
}

impl Events {
    fn begin(&mut self, native: bool) -> Vec<Bytes> {
        if !matches!(self.mode, Mode::NotStarted) {
            return Vec::new();
        }
        if native {
            self.mode = Mode::Native(reply::NativeRelay::default());
            Vec::new()
        } else {
            self.mode = Mode::Translated;
            sse(self.translator.start())
        }
    }
}

fn sse_named(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn sse(events: Vec<reply::Event>) -> Vec<Bytes> {
    events
        .into_iter()
        .map(|(name, data)| Bytes::from(format!("event: {name}\ndata: {data}\n\n")))
        .collect()
}

impl StreamFormat for Events {
    fn chunk(&mut self, chunk: CompletionChunk) -> Vec<Bytes> {
        let native = chunk
            .rest
            .get(extension::ANTHROPIC_EVENT)
            .and_then(|event| AnthropicEvent::deserialize(event).ok());
        let mut out = self.begin(native.is_some());
        match (&mut self.mode, native) {
            (Mode::Native(relay), Some(event)) => {
                if let Some(event) = relay.event(event, &self.id, &self.model) {
                    out.push(sse_named(&event.event, &event.data));
                }
            }
            // A relayed stream's own chunks without an event carry nothing more to write.
            (Mode::Native(_), None) => {}
            _ => out.extend(sse(self.translator.chunk(&chunk))),
        }
        out
    }

    fn end(&mut self, usage: CompletionUsage) -> Vec<Bytes> {
        let mut out = self.begin(false);
        match &mut self.mode {
            Mode::Native(relay) => out.extend(sse(relay.end(&usage))),
            _ => out.extend(sse(self.translator.end(&usage))),
        }
        out
    }

    fn fail(&mut self, error: &ApiError) -> Vec<Bytes> {
        // After the headers: the failure is an `error` event, which the SDKs raise.
        let (_, body) = envelope(crate::api::envelope::status(error.kind), &error.message);
        sse(vec![("error", json!(body))])
    }
}

async fn create(
    State(app): State<App>,
    caller: Caller,
    ApiBody(body): ApiBody<MessageCreateRequest>,
) -> ApiResult<Response> {
    let org = caller.org.clone();
    let created = crate::domain::messages::create::create(
        app.chat_ports(),
        app.pdf.as_ref(),
        caller,
        body,
        |stop_sequences| Arc::new(Anthropic { stop_sequences }),
    );
    let answer = crate::domain::fair_slots::as_tenant(&org, created).await?;
    Ok(crate::api::chat_answers::render(answer))
}

async fn count_tokens(
    State(app): State<App>,
    caller: Caller,
    ApiBody(body): ApiBody<MessageCountTokensRequest>,
) -> ApiResult<Response> {
    use crate::domain::messages::create::TokenCountAnswer;
    let counted = crate::domain::messages::create::count_tokens(
        app.chat_ports(),
        app.pdf.as_ref(),
        &caller,
        body,
    );
    let answer = crate::domain::fair_slots::as_tenant(&caller.org, counted).await?;
    Ok(match answer {
        TokenCountAnswer::Counted { count, status } => {
            let mut response = Json(count).into_response();
            crate::api::rate_limits::apply(&status, response.headers_mut());
            response
        }
        TokenCountAnswer::Limited(limited) => crate::api::rate_limits::refused(limited),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_anthropics_error_types() {
        for (ours, kind, theirs) in [
            (400, "invalid_request_error", 400),
            (401, "authentication_error", 401),
            (402, "billing_error", 402),
            (403, "permission_error", 403),
            (404, "not_found_error", 404),
            (413, "request_too_large", 413),
            (429, "rate_limit_error", 429),
            (500, "api_error", 500),
            (502, "api_error", 502),
            (503, "overloaded_error", 529),
            (504, "timeout_error", 504),
        ] {
            let (k, s) = error_type(StatusCode::from_u16(ours).unwrap());
            assert_eq!((k, s.as_u16()), (kind, theirs), "{ours}");
        }
    }
}
