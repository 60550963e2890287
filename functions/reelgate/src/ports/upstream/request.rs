//! The chat completions request the upstream port takes, as the chat rules
//! (`domain::chat::validate`) leave it: only the parameters the
//! contract knows, each as the caller gave it (a number stays the `Number` it was, so `1` never
//! becomes `1.0`), the messages with the roles and keys an upstream needs. It is what is sent
//! upstream (serialized as it is, the routed upstream then naming its own model), and its schema
//! is the OpenAPI document's `ChatCompletionRequest`, with the ranges the rules check.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use utoipa::openapi::schema::{
    ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::ToSchema;

/// An inclusive range of a numeric parameter, checked by the rules and shown in the document.
#[derive(Clone, Copy, Debug)]
pub struct Range<T> {
    pub min: T,
    pub max: T,
}

pub const TEMPERATURE: Range<f64> = Range { min: 0.0, max: 2.0 };
pub const TOP_P: Range<f64> = Range { min: 0.0, max: 1.0 };
pub const N: Range<i64> = Range { min: 1, max: 128 };
pub const MAX_TOKENS: Range<i64> = Range {
    min: 1,
    max: i64::MAX,
};
pub const PENALTY: Range<f64> = Range {
    min: -2.0,
    max: 2.0,
};
pub const TOP_LOGPROBS: Range<i64> = Range { min: 0, max: 20 };
pub const SEED: Range<i64> = Range {
    min: i64::MIN,
    max: i64::MAX,
};
pub const TOP_K: Range<i64> = Range {
    min: -1,
    max: i64::MAX,
};
pub const MIN_P: Range<f64> = Range { min: 0.0, max: 1.0 };
pub const LOGIT_BIAS: Range<f64> = Range {
    min: -100.0,
    max: 100.0,
};
/// Stop sequences a request may give.
pub const MAX_STOP: usize = 4;

/// A number or `null` (an explicit `null` counts as absent, as it does for OpenAI).
fn nullable(kind: Type) -> SchemaType {
    SchemaType::from_iter([kind, Type::Null])
}

/// A nullable number within `range`.
pub fn number_schema(range: Range<f64>) -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::Number))
        .minimum(Some(range.min))
        .maximum(Some(range.max))
        .into()
}

fn integer_schema(range: Range<i64>) -> Schema {
    let bound = |n: i64| (n != i64::MIN && n != i64::MAX).then_some(n);
    ObjectBuilder::new()
        .schema_type(nullable(Type::Integer))
        .minimum(bound(range.min))
        .maximum(bound(range.max))
        .into()
}

pub fn temperature_schema() -> Schema {
    number_schema(TEMPERATURE)
}
pub fn top_p_schema() -> Schema {
    number_schema(TOP_P)
}
fn n_schema() -> Schema {
    integer_schema(N)
}
fn max_tokens_schema() -> Schema {
    integer_schema(MAX_TOKENS)
}
fn penalty_schema() -> Schema {
    number_schema(PENALTY)
}
fn top_logprobs_schema() -> Schema {
    integer_schema(TOP_LOGPROBS)
}
fn seed_schema() -> Schema {
    integer_schema(SEED)
}
fn top_k_schema() -> Schema {
    integer_schema(TOP_K)
}
fn min_p_schema() -> Schema {
    number_schema(MIN_P)
}
fn repetition_penalty_schema() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::Number))
        .exclusive_minimum(Some(0.0))
        .into()
}
fn logit_bias_schema() -> Schema {
    ObjectBuilder::new()
        .schema_type(nullable(Type::Object))
        .description(Some("Token id (an integer, as a key) to a bias."))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .minimum(Some(LOGIT_BIAS.min))
                .maximum(Some(LOGIT_BIAS.max)),
        ))
        .into()
}

/// A string, or an array of up to [`MAX_STOP`] strings.
fn stop_schema() -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(
            ArrayBuilder::new()
                .items(ObjectBuilder::new().schema_type(Type::String))
                .max_items(Some(MAX_STOP)),
        )
        .into()
}

/// A string, or `other` (an array of parts, an object), or `null`.
pub fn string_or(other: impl Into<Schema>) -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(other.into())
        .into()
}

/// A string or an array of content parts.
pub fn content_schema() -> Schema {
    string_or(ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::Object)))
}

/// `none`, `auto`, `required`, or an object naming a tool.
pub fn tool_choice_schema() -> Schema {
    string_or(ObjectBuilder::new().schema_type(Type::Object))
}

/// `POST /v1/chat/completions` (and the console's chat): OpenAI's request; `model` and
/// `messages` are required, any other top-level parameter is refused. The Messages API's
/// requests are translated into one and checked by the same rules.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"model": "llama-3.1-8b", "messages": [{"role": "user", "content": "Hello"}]}))]
pub struct ChatCompletionRequest {
    /// A chat model id of `GET /v1/models`. Sent upstream as given; the routed upstream replaces
    /// it with its own name for the model.
    pub model: String,
    #[schema(min_items = 1)]
    pub messages: Vec<ChatMessage>,
    /// `true` answers `text/event-stream` of `chat.completion.chunk` objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Only with `stream: true`. (The upstream is always asked for usage: billing needs it.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = temperature_schema)]
    pub temperature: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = top_p_schema)]
    pub top_p: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = n_schema)]
    pub n: Option<Number>,
    /// Deprecated by OpenAI; give `max_completion_tokens` or this, not both.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = max_tokens_schema)]
    pub max_tokens: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = max_tokens_schema)]
    pub max_completion_tokens: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = stop_schema)]
    pub stop: Option<Stop>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = penalty_schema)]
    pub frequency_penalty: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = penalty_schema)]
    pub presence_penalty: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    /// Needs `logprobs: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = top_logprobs_schema)]
    pub top_logprobs: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = logit_bias_schema)]
    pub logit_bias: Option<Map<String, Value>>,
    /// `{type: text | json_object}` or `{type: json_schema, json_schema: {name, schema,
    /// strict}}` (the last needs a model with the `json_schema` capability).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub response_format: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = seed_schema)]
    pub seed: Option<Number>,
    /// Function tools, `{type: function, function: {name, description, parameters, strict}}`
    /// each (a model with the `tools` capability).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tools: Option<Vec<Value>>,
    /// `none`, `auto`, `required` or `{type: function, function: {name}}` naming one of
    /// `tools`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = tool_choice_schema)]
    pub tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// One of the model's reasoning efforts (`GET /v1/models`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = top_k_schema)]
    pub top_k: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = min_p_schema)]
    pub min_p: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = repetition_penalty_schema)]
    pub repetition_penalty: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The Messages API's exact thinking budget (`ports::upstream::extension::THINKING_BUDGET`);
    /// never read from a caller.
    #[serde(
        rename = "reelgate_thinking_budget_tokens",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(ignore)]
    pub thinking_budget: Option<u64>,
    /// A key an OpenAI-compatible upstream routes the prompt cache by (OpenAI's
    /// `prompt_cache_key`); upstreams with explicit cache points have no use for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// Where the prompt's cache points are (`ports::upstream::extension::CACHE_POINTS`): from a
    /// Messages request's `cache_control` blocks, or placed for an `auto_cache` model; never
    /// read from a caller.
    #[serde(
        rename = "reelgate_cache_points",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(ignore)]
    pub cache_points: Option<Vec<crate::ports::upstream::CachePoint>>,
    /// The caller's own Messages API body, for a model only native Anthropic upstreams serve
    /// (`ports::upstream::extension::ANTHROPIC_REQUEST`); never read from a caller.
    #[serde(
        rename = "reelgate_anthropic_request",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(ignore)]
    pub anthropic_request: Option<Value>,
}

impl ChatCompletionRequest {
    /// The request without reelgate's extensions, for an upstream that has no use for them.
    pub fn without_extensions(mut self) -> ChatCompletionRequest {
        self.thinking_budget = None;
        self.cache_points = None;
        self.anthropic_request = None;
        for message in &mut self.messages {
            message.reasoning_blocks = None;
        }
        self
    }

    /// The request as the JSON an adapter that translates it reads.
    pub fn to_json(&self) -> Value {
        // Cannot fail: every map key is a string and every field serializes.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct StreamOptions {
    /// Every chunk carries `usage: null`, and a last chunk with `choices: []` the usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
}

/// `stop`: one sequence or a list.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

/// A message's author. `developer` is OpenAI's newer name for `system`; open-weight chat
/// templates know only `system`, so it travels as that.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ChatRole)]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The role as the wire writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub fn parse(role: &str) -> Option<Role> {
        Some(match role {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }

    /// The role an upstream is sent.
    pub fn upstream(self) -> Role {
        match self {
            Role::Developer => Role::System,
            other => other,
        }
    }
}

/// A content part this service writes into a user message itself (from a Responses input item,
/// a file's bytes, a PDF's pages). Parts a caller sends to chat completions pass as written.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WrittenPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

/// An `image_url` part's image: an http(s) URL (presigned for a stored file) or a `data:` URL.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImageUrl {
    pub url: String,
    /// `auto`, `low` or `high`.
    pub detail: String,
}

impl WrittenPart {
    /// An image at `url`, its detail left to the model.
    pub fn image(url: String) -> WrittenPart {
        WrittenPart::ImageUrl {
            image_url: ImageUrl {
                url,
                detail: "auto".to_owned(),
            },
        }
    }
}

/// One message. Other keys (`refusal`, `annotations`, `audio` echoed back from an earlier reply
/// by SDKs) carry nothing an upstream needs and are dropped.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ChatMessage {
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A string or an array of content parts: `text`, `image_url` (`{url | file_id, detail}`),
    /// `video_url`, `audio_url`, `input_audio` (`{data, format}`), `file` (`{file_id |
    /// file_data}`) for user messages; `text` (and `refusal` for assistant messages) otherwise.
    /// Required except on an assistant message with `tool_calls` (sent upstream as `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = content_schema)]
    pub content: Option<Value>,
    /// An assistant message's `{id, type: function, function: {name, arguments}}` calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub tool_calls: Option<Value>,
    /// A tool message's answer to a call of an earlier assistant message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An assistant message's Anthropic thinking blocks, carried from a Messages API request
    /// (`ports::upstream::extension::REASONING_BLOCKS`); never read from a caller.
    #[serde(
        rename = "reelgate_reasoning_blocks",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(ignore)]
    pub reasoning_blocks: Option<Value>,
}

impl ChatMessage {
    /// A message of `role` with nothing else yet.
    pub fn new(role: Role) -> ChatMessage {
        ChatMessage {
            role,
            name: None,
            content: None,
            tool_calls: None,
            tool_call_id: None,
            reasoning_blocks: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::upstream::extension;
    use serde_json::json;

    #[test]
    fn the_extensions_serialize_under_their_ports_names() {
        let request = ChatCompletionRequest {
            model: "m".into(),
            messages: vec![ChatMessage {
                content: Some(Value::Null),
                reasoning_blocks: Some(json!([])),
                ..ChatMessage::new(Role::Assistant)
            }],
            temperature: Some(Number::from(1)),
            stop: Some(Stop::One("x".into())),
            thinking_budget: Some(2048),
            ..ChatCompletionRequest::default()
        };
        let v = serde_json::to_value(&request).unwrap();
        assert_eq!(v[extension::THINKING_BUDGET], json!(2048));
        assert_eq!(
            v["messages"][0][extension::REASONING_BLOCKS],
            json!([]),
            "{v}"
        );
        // Values as given: an integer stays an integer; an absent content on an assistant
        // message is an explicit null.
        assert_eq!(v["temperature"].to_string(), "1");
        assert_eq!(v["messages"][0]["content"], Value::Null);
        assert!(v["messages"][0]
            .as_object()
            .unwrap()
            .contains_key("content"));
        assert_eq!(v["stop"], json!("x"));
        assert!(v.get("stream").is_none());
    }
}
