//! The `/v1/chat/completions` body as serde reads it: every top-level parameter the contract
//! knows, each of its type (anything else is refused, as OpenAI does), and the messages with
//! their roles. What a shape cannot state (ranges, tool names, the model's capabilities, media
//! URLs) is `validate`'s, which turns the body into the typed upstream request. The parts an
//! upstream takes as they are (message content, tool calls, tools, `tool_choice`,
//! `response_format`) stay JSON values here and there, checked by the rules.
//!
//! A body serde refuses is refused in the rules' order, the same as a body that reads: the
//! model first, then an unknown parameter, then the parameter at fault ([`Unread::refusal`]).

use crate::domain::catalog::{Catalog, ChatModel};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{self, wrong_type, FaultKind, ShapeFault, Unparsed};
use crate::ports::upstream::request::Role;
use serde::Deserialize;
use serde_json::{Map, Number, Value};
use std::sync::OnceLock;

/// `POST /v1/chat/completions` (and the console's chat) as sent.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatCompletionBody {
    pub model: Option<String>,
    pub messages: Option<Vec<MessageBody>>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptionsBody>,
    pub temperature: Option<Number>,
    pub top_p: Option<Number>,
    pub n: Option<Number>,
    pub max_tokens: Option<Number>,
    pub max_completion_tokens: Option<Number>,
    pub stop: Option<StopBody>,
    pub frequency_penalty: Option<Number>,
    pub presence_penalty: Option<Number>,
    pub logprobs: Option<bool>,
    pub top_logprobs: Option<Number>,
    pub logit_bias: Option<Map<String, Value>>,
    pub response_format: Option<Map<String, Value>>,
    pub seed: Option<Number>,
    pub tools: Option<Vec<Value>>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub reasoning_effort: Option<String>,
    pub top_k: Option<Number>,
    pub min_p: Option<Number>,
    pub repetition_penalty: Option<Number>,
    pub user: Option<String>,
    pub prompt_cache_key: Option<String>,
}

/// One message as sent. Other keys (`refusal`, `annotations`, `audio` echoed back from an
/// earlier reply by SDKs) carry nothing an upstream needs and are not read; `tool_calls` and
/// `tool_call_id` are read only for the roles that have them.
#[derive(Debug, Deserialize)]
pub struct MessageBody {
    pub role: Role,
    pub name: Option<String>,
    pub content: Option<Value>,
    pub tool_calls: Option<Value>,
    pub tool_call_id: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamOptionsBody {
    pub include_usage: Option<bool>,
}

/// `stop` as sent: one sequence, or a list whose items the rules check one by one (so that a
/// refusal names the item).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum StopBody {
    One(String),
    Many(Vec<Value>),
}

/// The sentence for a non-string `model`.
pub const MODEL_EXPECTED: &str = "model must be a non-empty string.";

/// The model asked for, present and not empty: none → `model is required.`; `""` →
/// [`MODEL_EXPECTED`]. The chat rules and the Messages API's share it.
pub fn model_named(model: Option<&str>) -> ApiResult<&str> {
    match model {
        None => Err(ApiError::invalid("model", "model is required.")),
        Some("") => Err(ApiError::invalid("model", MODEL_EXPECTED)),
        Some(id) => Ok(id),
    }
}

/// Resolves `model` against the catalog: none → `model is required.`; unknown → 404
/// `model_not_found`; a video model → 400 `model_not_chat_capable`.
pub fn chat_model<'a>(catalog: &'a Catalog, model: Option<&str>) -> ApiResult<&'a ChatModel> {
    let id = model_named(model)?;
    if let Some(model) = catalog.chat_model(id) {
        return Ok(model);
    }
    if catalog.video_model(id).is_some() {
        return Err(ApiError::new(
            crate::domain::error::ErrorKind::InvalidRequest,
            "model_not_chat_capable",
            format!("'{id}' is a video model; use it with /v1/videos. GET /v1/models lists the chat models."),
        )
        .with_param("model"));
    }
    Err(ApiError::not_found(
        "model_not_found",
        format!("The model '{id}' does not exist. GET /v1/models lists the chat models."),
    )
    .with_param("model"))
}

/// A body serde did not read: the refusal of its shape, and (for a JSON object) the object,
/// for the refusals the rules give before the shape's.
#[derive(Debug)]
pub struct Unread {
    // Boxed: the refusal is large and an unread body is the rare case.
    shape: Box<ApiError>,
    syntax: bool,
    object: Option<Map<String, Value>>,
}

impl Unread {
    /// Whether the body is not JSON at all (its refusal is the JSON extractor's).
    pub fn is_syntax(&self) -> bool {
        self.syntax
    }

    /// The refusal of the body's shape alone.
    pub fn into_error(self) -> ApiError {
        *self.shape
    }

    /// The refusal in the rules' order: the model, an unknown parameter, the shape.
    pub fn refusal(self, catalog: &Catalog) -> ApiError {
        let Some(object) = self.object else {
            return *self.shape;
        };
        let model = match object.get("model") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id.as_str()),
            Some(_) => return ApiError::invalid("model", MODEL_EXPECTED),
        };
        if let Err(e) = chat_model(catalog, model) {
            return e;
        }
        if let Some(name) = object
            .keys()
            .find(|k| !parameter_names().contains(&k.as_str()))
        {
            return unknown_parameter(name);
        }
        *self.shape
    }
}

/// Reads a body from its JSON bytes (already through the bounded pre-scan).
pub fn read(bytes: &[u8]) -> Result<ChatCompletionBody, Unread> {
    params::parse_body(bytes).map_err(|unparsed| match unparsed {
        Unparsed::Syntax(refusal) => Unread {
            shape: Box::new(refusal),
            syntax: true,
            object: None,
        },
        Unparsed::NotAnObject => Unread {
            shape: Box::new(params::not_an_object()),
            syntax: false,
            object: None,
        },
        Unparsed::Shape(fault) => Unread {
            shape: Box::new(shape_refusal(&fault)),
            syntax: false,
            // Only a refused body pays for a second read, to be refused in the rules' order.
            object: serde_json::from_slice(bytes).ok(),
        },
    })
}

/// A chat body built as JSON by another API (the Messages API's translation), read as a
/// caller's body is; its model has been resolved by its caller already.
impl TryFrom<Value> for ChatCompletionBody {
    type Error = ApiError;

    fn try_from(body: Value) -> ApiResult<ChatCompletionBody> {
        if !body.is_object() {
            return Err(params::not_an_object());
        }
        params::parse_from(body).map_err(|fault| shape_refusal(&fault))
    }
}

fn unknown_parameter(name: &str) -> ApiError {
    ApiError::invalid(
        name,
        format!("Unrecognized request argument supplied: {name}"),
    )
}

/// The refusal of a body whose shape serde could not read, in OpenAI's words for chat.
fn shape_refusal(fault: &ShapeFault) -> ApiError {
    match fault.kind {
        FaultKind::Unknown => {
            let parent = fault.path.strip_suffix(&fault.field).unwrap_or_default();
            match parent.trim_end_matches('.') {
                "" => unknown_parameter(&fault.field),
                // Below the top, only `stream_options` refuses names it does not know.
                parent => ApiError::invalid(
                    &format!("{parent}.{}", fault.field),
                    format!("Unrecognized stream option: {}", fault.field),
                ),
            }
        }
        _ if fault.path.is_empty() => params::not_an_object(),
        _ => ApiError::invalid(&fault.path, expected(&fault.path)),
    }
}

/// The sentence for a value of the wrong shape at `path`.
fn expected(path: &str) -> String {
    let param = path.split(['.', '[']).next().unwrap_or_default();
    match param {
        "model" => MODEL_EXPECTED.to_owned(),
        "messages" => message_expected(path),
        "stream" | "logprobs" | "parallel_tool_calls" => wrong_type(param, "a boolean").message,
        "stream_options" if path == param => "stream_options must be an object.".to_owned(),
        "stream_options" => "stream_options.include_usage must be a boolean.".to_owned(),
        "temperature" | "top_p" | "frequency_penalty" | "presence_penalty" | "min_p" => {
            wrong_type(param, "a number").message
        }
        "n" | "max_tokens" | "max_completion_tokens" | "top_logprobs" | "seed" | "top_k" => {
            wrong_type(param, "an integer").message
        }
        "repetition_penalty" => "repetition_penalty must be a number above 0.".to_owned(),
        "stop" => "stop must be a string or an array of up to 4 strings.".to_owned(),
        "logit_bias" => "logit_bias must be an object of token id to bias.".to_owned(),
        "response_format" => "response_format must be an object.".to_owned(),
        "tools" => "tools must be an array of function tools.".to_owned(),
        "reasoning_effort" | "user" | "prompt_cache_key" => wrong_type(param, "a string").message,
        _ => format!("{path} is not valid."),
    }
}

/// The sentence for `messages`, `messages[i]` or a key of one.
fn message_expected(path: &str) -> String {
    match path.rsplit_once('.').map(|(_, key)| key) {
        None if path == "messages" => "messages must be an array.",
        None => "Each message must be an object.",
        Some("role") => "role must be one of system, developer, user, assistant, tool.",
        Some("name") => "name must be a string.",
        Some(_) => return format!("{path} is not valid."),
    }
    .to_owned()
}

/// The body's parameter names, as serde's derive declares them (the struct's fields, so there
/// is no second list to keep in step).
fn parameter_names() -> &'static [&'static str] {
    static NAMES: OnceLock<&'static [&'static str]> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: &'static [&'static str] = &[];
        let _ = ChatCompletionBody::deserialize(FieldNames(&mut names));
        names
    })
}

/// A deserializer that reads nothing and keeps the field names a struct asks it for.
struct FieldNames<'a>(&'a mut &'static [&'static str]);

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("only the field names are read"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(serde::de::Error::custom("only the field names are read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_names_are_the_fields() {
        let names = parameter_names();
        assert_eq!(names.len(), 26, "{names:?}");
        assert!(names.contains(&"model") && names.contains(&"prompt_cache_key"));
    }

    #[test]
    fn a_body_reads_into_its_types() {
        let body = read(
            br#"{"model": "m", "messages": [{"role": "developer", "content": "x", "refusal": null}],
                "stop": ["a"], "temperature": 1, "tool_choice": "auto", "user": null}"#,
        )
        .expect("read");
        assert_eq!(body.model.as_deref(), Some("m"));
        let messages = body.messages.expect("messages");
        assert_eq!(messages[0].role, Role::Developer);
        assert!(matches!(body.stop, Some(StopBody::Many(ref s)) if s.len() == 1));
        assert_eq!(
            body.temperature.map(|n| n.to_string()).as_deref(),
            Some("1")
        );
        assert_eq!(body.tool_choice, Some(Value::from("auto")));
        assert!(body.user.is_none());
    }

    #[test]
    fn a_value_that_is_no_object_is_refused_as_such() {
        let e = ChatCompletionBody::try_from(Value::from(1)).expect_err("refused");
        assert_eq!(e.message, "The request body must be a JSON object.");
        let e = read(b"[\"m\", []]").expect_err("refused");
        assert!(!e.is_syntax());
        assert!(read(b"{\"model\": ").expect_err("refused").is_syntax());
    }
}
