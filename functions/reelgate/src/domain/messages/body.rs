//! The Messages API's bodies as serde reads them (`POST /v1/messages`, `POST
//! /v1/messages/count_tokens`): each top-level field of its type, anything else refused as
//! Anthropic does (`n: Extra inputs are not permitted.`). The parts the translation to chat reads
//! block by block (messages, system, thinking, tools, tool_choice) stay JSON values here, checked
//! where they are translated (`request`) so that a failure names its place the way Anthropic
//! does (`messages.0.content.1.source`).

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{FaultKind, RequestBody, ShapeFault};
use crate::ports::upstream::request::Range;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Stop sequences a request may give (the chat rules' limit).
const MAX_STOP_SEQUENCES: usize = 4;

/// Anthropic's range of `temperature` and `top_p`.
pub const SAMPLING: Range<f64> = Range { min: 0.0, max: 1.0 };

/// A refusal in Anthropic's words: the field's place, then what is wrong with it.
pub(crate) fn invalid(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::invalid(param, format!("{param}: {}", message.into()))
}

/// `POST /v1/messages/count_tokens`: a Messages request without `max_tokens`, `stream` and the
/// sampling fields. Its nested values are checked (each failure naming its place,
/// `messages.0.content.1.source`) while they are translated.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageCountTokensRequest {
    #[schema(value_type = String, min_length = 1, required = true)]
    pub model: Option<String>,
    /// `{role: user | assistant, content: string | blocks}`; blocks are `text`, `image`,
    /// `document`, `tool_use`, `tool_result` (and `thinking`, dropped).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<Object>, min_items = 1, required = true)]
    pub messages: Option<Vec<Value>>,
    /// A string or text blocks.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::ports::upstream::request::content_schema)]
    pub system: Option<Value>,
    /// `{type: enabled, budget_tokens}` (at least 1024, below `max_tokens`) or
    /// `{type: disabled}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub thinking: Option<Value>,
    /// Client tools, `{name, description, input_schema}` each.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Vec<Value>>,
    /// `{type: auto | any | tool | none, name, disable_parallel_tool_use}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub tool_choice: Option<Value>,
}

/// `{user_id}`: the end user, sent upstream as chat's `user`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = MessageMetadata)]
pub struct Metadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

fn unit_schema() -> utoipa::openapi::schema::Schema {
    crate::ports::upstream::request::number_schema(SAMPLING)
}

/// `POST /v1/messages`: Anthropic's Messages API request (docs/messages.md maps each field):
/// the prompt a count takes, and what shapes the answer.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"model": "llama-3.1-8b", "max_tokens": 256, "messages": [{"role": "user", "content": "Hello"}]}))]
pub struct MessageCreateRequest {
    #[schema(value_type = String, min_length = 1, required = true)]
    pub model: Option<String>,
    /// The conversation, as a token count takes it: at least one message.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<Object>, min_items = 1, required = true)]
    pub messages: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::ports::upstream::request::content_schema)]
    pub system: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub tool_choice: Option<Value>,
    #[schema(value_type = u64, minimum = 1, required = true)]
    pub max_tokens: Option<u64>,
    /// `true` answers `text/event-stream` of Anthropic's events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = stop_sequences_schema)]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = unit_schema)]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = unit_schema)]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::params::optional_object"
    )]
    pub metadata: Option<Metadata>,
}

/// Up to [`MAX_STOP_SEQUENCES`] non-empty strings.
fn stop_sequences_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1)),
        )
        .max_items(Some(MAX_STOP_SEQUENCES))
        .into()
}

/// A read Messages request of either route.
#[derive(Clone, Debug)]
pub enum MessagesRequest {
    Create(MessageCreateRequest),
    CountTokens(MessageCountTokensRequest),
}

impl MessagesRequest {
    /// The model asked for (present and not empty once the body is read).
    pub fn model(&self) -> Option<&str> {
        match self {
            MessagesRequest::Create(r) => r.model.as_deref(),
            MessagesRequest::CountTokens(r) => r.model.as_deref(),
        }
    }

    /// The values that carry content blocks (all but the scalars).
    fn prompt_values(&self) -> impl Iterator<Item = &Value> {
        let (messages, system, thinking, tools, tool_choice) = match self {
            MessagesRequest::Create(r) => (
                &r.messages,
                &r.system,
                &r.thinking,
                &r.tools,
                &r.tool_choice,
            ),
            MessagesRequest::CountTokens(r) => (
                &r.messages,
                &r.system,
                &r.thinking,
                &r.tools,
                &r.tool_choice,
            ),
        };
        [system, thinking, tool_choice]
            .into_iter()
            .flatten()
            .chain([messages, tools].into_iter().flatten().flatten())
    }

    /// Whether translating the request is work before it can be checked: it fetches a URL
    /// ([`MessagesRequest::fetches_urls`]) or reads a document (a PDF is rasterized for a model
    /// without `file`).
    pub fn needs_work(&self) -> bool {
        self.fetches_urls() || self.any_value(has_document)
    }

    /// Whether translating the request fetches a URL: an image or document block (anywhere,
    /// tool results included) whose `source` is `{"type": "url"}`.
    pub fn fetches_urls(&self) -> bool {
        self.any_value(fetches_urls)
    }

    fn any_value(&self, test: fn(&Value) -> bool) -> bool {
        self.prompt_values().any(test)
    }
}

fn has_document(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            o.get("type").and_then(Value::as_str) == Some("document")
                || o.values().any(has_document)
        }
        Value::Array(items) => items.iter().any(has_document),
        _ => false,
    }
}

fn fetches_urls(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            o.get("source")
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                == Some("url")
                || o.values().any(fetches_urls)
        }
        Value::Array(items) => items.iter().any(fetches_urls),
        _ => false,
    }
}

/// A value serde could not read, in Anthropic's words for the field at fault (`stop_sequences.1`
/// for serde's `stop_sequences[1]`).
fn shape_refusal(fault: &ShapeFault) -> Option<ApiError> {
    let place = fault.path.replace('[', ".").replace(']', "");
    Some(match (&fault.kind, place.as_str()) {
        (FaultKind::Unknown, _) => invalid(&place, "Extra inputs are not permitted."),
        (FaultKind::Missing, "model") => crate::domain::params::required("model"),
        (_, "model") => ApiError::invalid("model", crate::domain::chat::body::MODEL_EXPECTED),
        (_, "max_tokens") => invalid(&place, "Input should be an integer of at least 1."),
        (_, "stream") => invalid(&place, "Input should be a valid boolean."),
        (_, "temperature" | "top_p") => unit_refused(&place),
        (_, "top_k") => invalid(&place, "Input should be a non-negative integer."),
        (_, "stop_sequences") => invalid(&place, "Input should be a list of strings."),
        (_, p) if p.starts_with("stop_sequences.") => {
            invalid(&place, "Input should be a non-empty string.")
        }
        (_, "metadata") => invalid(&place, "Input should be an object."),
        (_, "metadata.user_id") => invalid(&place, "Input should be a string."),
        (_, "messages" | "tools") => invalid(&place, "Input should be a list."),
        _ => return None,
    })
}

fn unit_refused(param: &str) -> ApiError {
    let Range { min, max } = SAMPLING;
    invalid(
        param,
        format!("Input should be a number from {min} to {max}."),
    )
}

impl RequestBody for MessageCountTokensRequest {
    fn expected(_param: &str, _path: &str) -> Option<String> {
        None
    }

    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        shape_refusal(fault)
    }

    fn check(self) -> ApiResult<Self> {
        crate::domain::chat::body::model_named(self.model.as_deref())?;
        Ok(self)
    }
}

impl RequestBody for MessageCreateRequest {
    fn expected(_param: &str, _path: &str) -> Option<String> {
        None
    }

    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        shape_refusal(fault)
    }

    /// The model; `max_tokens` (at least 1); the sampling ranges; at most
    /// [`MAX_STOP_SEQUENCES`] stop sequences, none empty.
    fn check(self) -> ApiResult<Self> {
        crate::domain::chat::body::model_named(self.model.as_deref())?;
        match self.max_tokens {
            None => return Err(invalid("max_tokens", "Field required.")),
            Some(0) => {
                return Err(invalid(
                    "max_tokens",
                    "Input should be an integer of at least 1.",
                ))
            }
            Some(_) => {}
        }
        let Range { min, max } = SAMPLING;
        for (name, value) in [("temperature", self.temperature), ("top_p", self.top_p)] {
            if value.is_some_and(|n| !(min..=max).contains(&n)) {
                return Err(unit_refused(name));
            }
        }
        if let Some(sequences) = &self.stop_sequences {
            if sequences.len() > MAX_STOP_SEQUENCES {
                return Err(invalid(
                    "stop_sequences",
                    format!("At most {MAX_STOP_SEQUENCES} stop sequences are accepted."),
                ));
            }
            if let Some(i) = sequences.iter().position(String::is_empty) {
                return Err(invalid(
                    &format!("stop_sequences.{i}"),
                    "Input should be a non-empty string.",
                ));
            }
        }
        Ok(self)
    }
}
