//! Wire shapes for the OpenAPI document that no single Rust type carries: request bodies the
//! handlers read as JSON values (validated field by field in the domain, which names the
//! offending `param`), and answers they build with `json!`. The typed answers (`Video`,
//! `FileObject`, `AgreementStatus`) derive their schemas on the domain types themselves.
//!
//! Response shapes list the fields every answer carries and leave room for more (clients must
//! ignore unknown fields); request shapes list every parameter the service reads.

#![allow(dead_code)] // Read by the `ToSchema` derives only.

use serde_json::Value;
use utoipa::ToSchema;

/// `POST /v1/chat/completions`: OpenAI's request; `model` and `messages` are required.
#[derive(ToSchema)]
#[schema(example = json!({"model": "llama-3.1-8b", "messages": [{"role": "user", "content": "Hello"}]}))]
pub struct ChatCompletionRequest {
    pub model: String,
    #[schema(min_items = 1)]
    pub messages: Vec<ChatMessage>,
    /// `true` answers `text/event-stream` of `chat.completion.chunk` objects.
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
    pub tools: Option<Vec<Value>>,
    #[schema(value_type = Object)]
    pub tool_choice: Option<Value>,
    pub response_format: Option<Value>,
    pub reasoning_effort: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u32>,
    pub max_completion_tokens: Option<u32>,
    #[schema(value_type = Object)]
    pub stop: Option<Value>,
    pub user: Option<String>,
}

#[derive(ToSchema)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string or an array of content parts.
    #[schema(value_type = Object)]
    pub content: Option<Value>,
    pub name: Option<String>,
    pub tool_calls: Option<Vec<Value>>,
    pub tool_call_id: Option<String>,
}

#[derive(ToSchema)]
pub struct StreamOptions {
    pub include_usage: Option<bool>,
}

/// `POST /v1/messages`: Anthropic's Messages API request (docs/messages.md maps each field).
#[derive(ToSchema)]
#[schema(example = json!({"model": "llama-3.1-8b", "max_tokens": 256, "messages": [{"role": "user", "content": "Hello"}]}))]
pub struct MessageCreateRequest {
    pub model: String,
    #[schema(minimum = 1)]
    pub max_tokens: u64,
    /// `{role: user | assistant, content: string | blocks}`; blocks are `text`, `image`,
    /// `document`, `tool_use`, `tool_result` (and `thinking`, dropped).
    #[schema(min_items = 1)]
    pub messages: Vec<Value>,
    /// A string or text blocks.
    #[schema(value_type = Object)]
    pub system: Option<Value>,
    /// `true` answers `text/event-stream` of Anthropic's events.
    pub stream: Option<bool>,
    #[schema(max_items = 4)]
    pub stop_sequences: Option<Vec<String>>,
    #[schema(minimum = 0, maximum = 1)]
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u64>,
    /// `{user_id}`.
    pub metadata: Option<Value>,
    /// `{type: enabled, budget_tokens}` or `{type: disabled}`.
    pub thinking: Option<Value>,
    /// `{name, description, input_schema}` each.
    pub tools: Option<Vec<Value>>,
    /// `{type: auto | any | tool | none, name, disable_parallel_tool_use}`.
    pub tool_choice: Option<Value>,
}

/// `POST /v1/messages/count_tokens`: a Messages request without `max_tokens`, `stream` and
/// the sampling fields.
#[derive(ToSchema)]
pub struct MessageCountTokensRequest {
    pub model: String,
    #[schema(min_items = 1)]
    pub messages: Vec<Value>,
    #[schema(value_type = Object)]
    pub system: Option<Value>,
    pub thinking: Option<Value>,
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
}

/// A Messages API answer.
#[derive(ToSchema)]
pub struct Message {
    #[schema(pattern = "^msg_")]
    pub id: String,
    #[schema(rename = "type", pattern = "^message$")]
    pub kind: String,
    #[schema(pattern = "^assistant$")]
    pub role: String,
    pub model: String,
    /// `text`, `thinking` and `tool_use` blocks.
    pub content: Vec<Value>,
    /// `end_turn`, `max_tokens`, `stop_sequence`, `tool_use` or `refusal`.
    pub stop_reason: Option<String>,
    #[schema(required = true)]
    pub stop_sequence: Option<String>,
    /// `input_tokens`, `output_tokens`, `cache_read_input_tokens`,
    /// `cache_creation_input_tokens`.
    pub usage: Value,
}

/// `POST /v1/messages/count_tokens`'s answer.
#[derive(ToSchema)]
pub struct MessageTokensCount {
    pub input_tokens: u64,
}

/// Anthropic's error envelope, the body of every non-2xx answer of the Messages API's routes.
#[derive(ToSchema)]
pub struct AnthropicErrorResponse {
    #[schema(rename = "type", pattern = "^error$")]
    pub kind: String,
    pub error: AnthropicErrorBody,
    /// The request's id (also in the `request-id` header).
    pub request_id: Option<String>,
}

#[derive(ToSchema)]
pub struct AnthropicErrorBody {
    /// `invalid_request_error`, `authentication_error`, `billing_error`, `permission_error`,
    /// `not_found_error`, `request_too_large`, `rate_limit_error`, `api_error`,
    /// `timeout_error`, `overloaded_error`.
    #[schema(rename = "type")]
    pub kind: String,
    pub message: String,
}

/// A `chat.completion` object.
#[derive(ToSchema)]
pub struct ChatCompletion {
    pub id: String,
    pub object: String,
    pub created: i64,
    pub model: String,
    pub choices: Vec<Value>,
    pub usage: Option<Value>,
}

/// `POST /v1/responses`: OpenAI's Responses request.
#[derive(ToSchema)]
#[schema(example = json!({"model": "llama-3.1-8b", "input": "Hello"}))]
pub struct ResponseCreateRequest {
    pub model: String,
    /// A string or an array of input items.
    #[schema(value_type = Object)]
    pub input: Value,
    pub instructions: Option<String>,
    pub previous_response_id: Option<String>,
    /// `true` answers `text/event-stream` of typed events (`response.created`, ...).
    pub stream: Option<bool>,
    pub store: Option<bool>,
    pub tools: Option<Vec<Value>>,
    pub reasoning: Option<Value>,
    pub text: Option<Value>,
    pub truncation: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub metadata: Option<Value>,
}

/// A `response` object.
#[derive(ToSchema)]
pub struct ResponseObject {
    pub id: String,
    pub object: String,
    pub created_at: i64,
    pub status: String,
    pub model: String,
    pub output: Vec<Value>,
    pub usage: Option<Value>,
}

/// Server-sent events: `data: {json}` lines separated by blank lines (chat completions end
/// with `data: [DONE]`; the responses stream names each event with `event:`).
#[derive(ToSchema)]
#[schema(value_type = String)]
pub struct EventStream(String);
