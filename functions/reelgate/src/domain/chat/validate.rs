//! The rules of a chat completions request that its shape ([`ChatCompletionBody`]) cannot state:
//! ranges, tool and schema names, the model's capabilities and reasoning efforts, and (in
//! `message_rules`) each message's content. Every failure names its `param` the way OpenAI does
//! (`temperature`, `messages[1].content[0].type`, …). What passes becomes the typed request sent
//! upstream ([`ChatCompletionRequest`]): only the parameters the contract knows, each as the
//! caller gave it, so an upstream never sees something we did not check.

use crate::domain::catalog::{Catalog, ChatModel};
pub use crate::domain::chat::body::chat_model;
use crate::domain::chat::body::{ChatCompletionBody, StopBody};
pub use crate::domain::chat::message_rules::{capability_mismatch, require_capability, FileRef};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::wrong_type;
use crate::ports::upstream::request::{self, ChatCompletionRequest, Range, Stop, StreamOptions};
use serde_json::{Map, Number, Value};

/// Longest `prompt_cache_key` taken (OpenAI documents no limit; this keeps it a key).
const MAX_PROMPT_CACHE_KEY_BYTES: usize = 1024;

#[derive(Clone, Debug)]
pub struct Validated {
    pub model: ChatModel,
    /// The request for the upstream (the routed upstream sets its own name for the model).
    pub request: ChatCompletionRequest,
    pub stream: bool,
    pub include_usage: bool,
    pub files: Vec<FileRef>,
    /// Characters of text in the prompt plus a character equivalent of every other input part
    /// (`usage::part_estimate_chars`), for a usage estimate when the upstream reports none.
    pub prompt_chars: usize,
    /// What a stream's upstream call does when the client leaves before the end.
    pub on_leave: crate::domain::chat::stream::OnLeave,
}

/// The request a body makes against `catalog`'s model, or the first rule it breaks (in the
/// order of the parameters below; a body serde could not read is refused before any of them).
pub fn validate(catalog: &Catalog, body: ChatCompletionBody) -> ApiResult<Validated> {
    let model = chat_model(catalog, body.model.as_deref())?;
    let stream = body.stream.unwrap_or(false);
    let include_usage = match body.stream_options {
        None => false,
        Some(_) if !stream => {
            return Err(ApiError::invalid(
                "stream_options",
                "stream_options is only allowed when stream is true.",
            ))
        }
        Some(options) => options.include_usage.unwrap_or(false),
    };
    let temperature = number("temperature", body.temperature, request::TEMPERATURE)?;
    let top_p = number("top_p", body.top_p, request::TOP_P)?;
    let n = integer("n", body.n, request::N)?;
    let max_tokens = integer("max_tokens", body.max_tokens, request::MAX_TOKENS)?;
    let max_completion_tokens = integer(
        "max_completion_tokens",
        body.max_completion_tokens,
        request::MAX_TOKENS,
    )?;
    if max_tokens.is_some() && max_completion_tokens.is_some() {
        return Err(ApiError::invalid(
            "max_tokens",
            "Give max_completion_tokens or the deprecated max_tokens, not both.",
        ));
    }
    let stop = stop(body.stop)?;
    let frequency_penalty = number(
        "frequency_penalty",
        body.frequency_penalty,
        request::PENALTY,
    )?;
    let presence_penalty = number("presence_penalty", body.presence_penalty, request::PENALTY)?;
    let logprobs = body.logprobs;
    let top_logprobs = integer("top_logprobs", body.top_logprobs, request::TOP_LOGPROBS)?;
    if top_logprobs.is_some() && logprobs != Some(true) {
        return Err(ApiError::invalid(
            "top_logprobs",
            "top_logprobs requires logprobs to be true.",
        ));
    }
    let logit_bias = logit_bias(body.logit_bias)?;
    let response_format = response_format(model, body.response_format)?;
    let seed = integer("seed", body.seed, request::SEED)?;
    let (tools, tool_names) = tools(model, body.tools)?;
    let tool_choice = tool_choice(body.tool_choice, &tool_names)?;
    let reasoning_effort = reasoning_effort(model, body.reasoning_effort)?;
    let top_k = integer("top_k", body.top_k, request::TOP_K)?;
    let min_p = number("min_p", body.min_p, request::MIN_P)?;
    let repetition_penalty = match body.repetition_penalty {
        Some(n) if !n.as_f64().is_some_and(|n| n > 0.0) => {
            return Err(ApiError::invalid(
                "repetition_penalty",
                "repetition_penalty must be a number above 0.",
            ))
        }
        penalty => penalty,
    };
    if body
        .prompt_cache_key
        .as_ref()
        .is_some_and(|k| k.len() > MAX_PROMPT_CACHE_KEY_BYTES)
    {
        return Err(ApiError::invalid(
            "prompt_cache_key",
            format!("prompt_cache_key is longer than {MAX_PROMPT_CACHE_KEY_BYTES} bytes."),
        ));
    }
    let (messages, files, prompt_chars) =
        crate::domain::chat::message_rules::messages(model, body.messages)?;
    let request = ChatCompletionRequest {
        model: model.id.clone(),
        messages,
        // Always ask the upstream for usage when streaming: billing needs it even when the
        // caller does not.
        stream: stream.then_some(true),
        stream_options: stream.then_some(StreamOptions {
            include_usage: Some(true),
        }),
        temperature,
        top_p,
        n,
        max_tokens,
        max_completion_tokens,
        stop,
        frequency_penalty,
        presence_penalty,
        logprobs,
        top_logprobs,
        logit_bias,
        response_format,
        seed,
        tools,
        tool_choice,
        parallel_tool_calls: body.parallel_tool_calls,
        reasoning_effort,
        top_k,
        min_p,
        repetition_penalty,
        user: body.user,
        thinking_budget: None,
        prompt_cache_key: body.prompt_cache_key,
        cache_points: None,
        anthropic_request: None,
    };
    Ok(Validated {
        model: model.clone(),
        request,
        stream,
        include_usage,
        files,
        prompt_chars,
        on_leave: Default::default(),
    })
}

/// A number within `range`, as the caller wrote it.
fn number(name: &str, value: Option<Number>, range: Range<f64>) -> ApiResult<Option<Number>> {
    if let Some(n) = value.as_ref().and_then(Number::as_f64) {
        if !(range.min..=range.max).contains(&n) {
            let (min, max) = (range.min, range.max);
            return Err(ApiError::invalid(
                name,
                format!("{name} must be a number from {min} to {max}; got {n}."),
            ));
        }
    }
    Ok(value)
}

/// An integer within `range` (`i64::MAX` for no upper bound, `i64::MIN` for none below), as the
/// caller wrote it; the sentences are `domain::params`'.
fn integer(name: &str, value: Option<Number>, range: Range<i64>) -> ApiResult<Option<Number>> {
    let Some(v) = &value else {
        return Ok(None);
    };
    let n = v
        .as_i64()
        .or_else(|| v.as_u64().map(|u| u.min(i64::MAX as u64) as i64))
        .ok_or_else(|| wrong_type(name, "an integer"))?;
    if n < range.min || n > range.max {
        let bounds = match (range.min, range.max) {
            (i64::MIN, _) => String::new(),
            (min, i64::MAX) => format!(" of at least {min}"),
            (min, max) => format!(" from {min} to {max}"),
        };
        return Err(ApiError::invalid(
            name,
            format!("{name} must be an integer{bounds}; got {n}."),
        ));
    }
    Ok(value)
}

fn stop(stop: Option<StopBody>) -> ApiResult<Option<Stop>> {
    let items = match stop {
        None => return Ok(None),
        Some(StopBody::One(s)) => return Ok(Some(Stop::One(s))),
        Some(StopBody::Many(items)) => items,
    };
    if items.len() > request::MAX_STOP {
        return Err(ApiError::invalid(
            "stop",
            format!("stop takes at most {} sequences.", request::MAX_STOP),
        ));
    }
    let mut sequences = Vec::with_capacity(items.len());
    for (i, s) in items.into_iter().enumerate() {
        let Value::String(s) = s else {
            return Err(ApiError::invalid(
                &format!("stop[{i}]"),
                "Each stop sequence must be a string.",
            ));
        };
        sequences.push(s);
    }
    Ok(Some(Stop::Many(sequences)))
}

fn logit_bias(bias: Option<Map<String, Value>>) -> ApiResult<Option<Map<String, Value>>> {
    for (token, bias) in bias.iter().flatten() {
        let param = format!("logit_bias.{token}");
        if token.parse::<u64>().is_err() {
            return Err(ApiError::invalid(
                &param,
                format!("logit_bias keys are token ids (integers); got '{token}'."),
            ));
        }
        match bias.as_f64() {
            Some(b) if (request::LOGIT_BIAS.min..=request::LOGIT_BIAS.max).contains(&b) => {}
            _ => {
                return Err(ApiError::invalid(
                    &param,
                    "Each logit_bias value must be a number from -100 to 100.",
                ))
            }
        }
    }
    Ok(bias)
}

fn tool_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn response_format(model: &ChatModel, rf: Option<Map<String, Value>>) -> ApiResult<Option<Value>> {
    let Some(rf) = rf else {
        return Ok(None);
    };
    match rf.get("type").and_then(Value::as_str) {
        Some("text") | Some("json_object") => {}
        Some("json_schema") => {
            let schema = rf
                .get("json_schema")
                .and_then(Value::as_object)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "response_format.json_schema",
                        "response_format.json_schema must be an object with name and schema.",
                    )
                })?;
            match schema.get("name").and_then(Value::as_str) {
                Some(n) if tool_name_ok(n) => {}
                _ => {
                    return Err(ApiError::invalid(
                        "response_format.json_schema.name",
                        "json_schema.name is required: 1 to 64 letters, digits, '_' or '-'.",
                    ))
                }
            }
            if schema
                .get("schema")
                .is_some_and(|s| !s.is_object() && !s.is_null())
            {
                return Err(ApiError::invalid(
                    "response_format.json_schema.schema",
                    "json_schema.schema must be a JSON Schema object.",
                ));
            }
            if schema
                .get("strict")
                .is_some_and(|s| !s.is_boolean() && !s.is_null())
            {
                return Err(ApiError::invalid(
                    "response_format.json_schema.strict",
                    "json_schema.strict must be a boolean.",
                ));
            }
            require_capability(model, "json_schema", "response_format")?;
        }
        _ => {
            return Err(ApiError::invalid(
                "response_format.type",
                "response_format.type must be text, json_object or json_schema.",
            ))
        }
    }
    Ok(Some(Value::Object(rf)))
}

/// Returns the tools and their function names.
fn tools(
    model: &ChatModel,
    tools: Option<Vec<Value>>,
) -> ApiResult<(Option<Vec<Value>>, Vec<String>)> {
    let Some(tools) = tools else {
        return Ok((None, Vec::new()));
    };
    let mut names = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let p = format!("tools[{i}]");
        let tool = tool
            .as_object()
            .ok_or_else(|| ApiError::invalid(&p, "Each tool must be an object."))?;
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Err(ApiError::invalid(
                &format!("{p}.type"),
                "Tool type must be 'function'.",
            ));
        }
        let function = tool
            .get("function")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                ApiError::invalid(
                    &format!("{p}.function"),
                    "A function tool needs a function object.",
                )
            })?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !tool_name_ok(name) {
            return Err(ApiError::invalid(
                &format!("{p}.function.name"),
                "A function name is 1 to 64 letters, digits, '_' or '-'.",
            ));
        }
        if function
            .get("description")
            .is_some_and(|d| !d.is_string() && !d.is_null())
        {
            return Err(ApiError::invalid(
                &format!("{p}.function.description"),
                "description must be a string.",
            ));
        }
        if function
            .get("parameters")
            .is_some_and(|s| !s.is_object() && !s.is_null())
        {
            return Err(ApiError::invalid(
                &format!("{p}.function.parameters"),
                "parameters must be a JSON Schema object.",
            ));
        }
        if function
            .get("strict")
            .is_some_and(|s| !s.is_boolean() && !s.is_null())
        {
            return Err(ApiError::invalid(
                &format!("{p}.function.strict"),
                "strict must be a boolean.",
            ));
        }
        names.push(name.to_owned());
    }
    if !tools.is_empty() {
        require_capability(model, "tools", "tools")?;
    }
    Ok((Some(tools), names))
}

fn tool_choice(choice: Option<Value>, names: &[String]) -> ApiResult<Option<Value>> {
    let Some(value) = &choice else {
        return Ok(None);
    };
    match value {
        Value::String(s) if s == "none" || s == "auto" => {}
        Value::String(s) if s == "required" => {
            if names.is_empty() {
                return Err(ApiError::invalid(
                    "tool_choice",
                    "tool_choice 'required' needs tools.",
                ));
            }
        }
        Value::String(_) => {
            return Err(ApiError::invalid(
                "tool_choice",
                "tool_choice must be none, auto, required or {type: function, function: {name}}.",
            ))
        }
        Value::Object(choice) => {
            if choice.get("type").and_then(Value::as_str) != Some("function") {
                return Err(ApiError::invalid(
                    "tool_choice.type",
                    "tool_choice.type must be 'function'.",
                ));
            }
            let name = choice
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "tool_choice.function.name",
                        "tool_choice.function.name is required.",
                    )
                })?;
            if !names.iter().any(|n| n == name) {
                return Err(ApiError::invalid(
                    "tool_choice.function.name",
                    format!("tool_choice names '{name}', which is not one of the tools."),
                ));
            }
        }
        _ => {
            return Err(ApiError::invalid(
                "tool_choice",
                "tool_choice must be a string or an object.",
            ))
        }
    }
    Ok(choice)
}

fn reasoning_effort(model: &ChatModel, effort: Option<String>) -> ApiResult<Option<String>> {
    let Some(effort) = effort else {
        return Ok(None);
    };
    if !model.reasoning_efforts.contains(&effort) {
        let accepted = if model.reasoning_efforts.is_empty() {
            "it takes no reasoning_effort".to_owned()
        } else {
            format!("it accepts {}", model.reasoning_efforts.join(", "))
        };
        return Err(ApiError::new(
            crate::domain::error::ErrorKind::InvalidRequest,
            "unsupported_reasoning_effort",
            format!(
                "The model '{}' does not accept reasoning_effort '{effort}'; {accepted}.",
                model.id
            ),
        )
        .with_param("reasoning_effort"));
    }
    Ok(Some(effort))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The default catalog (with its video model `reel-1`) and one chat model `m` that takes
    /// text, tools and images and no reasoning effort.
    fn catalog() -> Catalog {
        let text = format!(
            "{}\n{}",
            crate::domain::catalog::DEFAULT_CATALOG,
            r#"
[[upstreams]]
id = "a"
kind = "openai"
base_url = "http://a.invalid/v1"

[[chat_models]]
id = "m"
upstream = "a"
capabilities = ["text", "tools", "vision"]
input_per_million = "1"
output_per_million = "2"
"#
        );
        Catalog::parse(&text).expect("test catalog")
    }

    /// The `param` and message a body is refused with.
    fn refusal(catalog: &Catalog, body: Value) -> (String, String) {
        let bytes = serde_json::to_vec(&body).expect("JSON");
        let e = match crate::domain::chat::body::read(&bytes) {
            Ok(body) => validate(catalog, body).expect_err("refused"),
            Err(unread) => unread.refusal(catalog),
        };
        (e.param.unwrap_or_default(), e.message)
    }

    /// `model: m` and one user message, with `extra`'s parameters over them.
    fn with(extra: Value) -> Value {
        let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}]});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        body
    }

    #[test]
    fn refusals_name_their_param_and_sentence() {
        let catalog = catalog();
        let user = |content: Value| json!([{"role": "user", "content": content}]);
        let cases: Vec<(Value, &str, &str)> = vec![
            (json!([1]), "", "The request body must be a JSON object."),
            (
                json!({"messages": user(json!("Hi"))}),
                "model",
                "model is required.",
            ),
            (
                with(json!({"model": 5})),
                "model",
                "model must be a non-empty string.",
            ),
            (
                with(json!({"model": "nope"})),
                "model",
                "The model 'nope' does not exist. GET /v1/models lists the chat models.",
            ),
            // The model is resolved before the rest of the body is read.
            (
                json!({"model": "nope", "temperature": "hot"}),
                "model",
                "The model 'nope' does not exist. GET /v1/models lists the chat models.",
            ),
            (
                with(json!({"model": "reel-1"})),
                "model",
                "'reel-1' is a video model; use it with /v1/videos. GET /v1/models lists the chat models.",
            ),
            (
                with(json!({"foo": 1})),
                "foo",
                "Unrecognized request argument supplied: foo",
            ),
            // Unknown parameters are refused before the known ones are read.
            (
                with(json!({"temperature": "hot", "foo": 1})),
                "foo",
                "Unrecognized request argument supplied: foo",
            ),
            (
                with(json!({"stream": "yes"})),
                "stream",
                "stream must be a boolean.",
            ),
            (
                with(json!({"stream_options": {"include_usage": true}})),
                "stream_options",
                "stream_options is only allowed when stream is true.",
            ),
            (
                with(json!({"stream": true, "stream_options": {"x": 1}})),
                "stream_options.x",
                "Unrecognized stream option: x",
            ),
            (
                with(json!({"stream": true, "stream_options": {"include_usage": 1}})),
                "stream_options.include_usage",
                "stream_options.include_usage must be a boolean.",
            ),
            (
                with(json!({"temperature": "1"})),
                "temperature",
                "temperature must be a number.",
            ),
            (
                with(json!({"temperature": 3})),
                "temperature",
                "temperature must be a number from 0 to 2; got 3.",
            ),
            (with(json!({"n": 1.5})), "n", "n must be an integer."),
            (
                with(json!({"max_tokens": 0})),
                "max_tokens",
                "max_tokens must be an integer of at least 1; got 0.",
            ),
            (
                with(json!({"max_tokens": 5, "max_completion_tokens": 5})),
                "max_tokens",
                "Give max_completion_tokens or the deprecated max_tokens, not both.",
            ),
            (
                with(json!({"stop": ["a", 1]})),
                "stop[1]",
                "Each stop sequence must be a string.",
            ),
            (
                with(json!({"stop": 5})),
                "stop",
                "stop must be a string or an array of up to 4 strings.",
            ),
            (
                with(json!({"stop": ["a", "b", "c", "d", "e"]})),
                "stop",
                "stop takes at most 4 sequences.",
            ),
            (
                with(json!({"top_logprobs": 2})),
                "top_logprobs",
                "top_logprobs requires logprobs to be true.",
            ),
            (
                with(json!({"logit_bias": {"x": 1}})),
                "logit_bias.x",
                "logit_bias keys are token ids (integers); got 'x'.",
            ),
            (
                with(json!({"logit_bias": {"7": 101}})),
                "logit_bias.7",
                "Each logit_bias value must be a number from -100 to 100.",
            ),
            (
                with(json!({"response_format": {"type": "xml"}})),
                "response_format.type",
                "response_format.type must be text, json_object or json_schema.",
            ),
            (
                with(json!({"response_format": {"type": "json_schema", "json_schema": {"name": "a b"}}})),
                "response_format.json_schema.name",
                "json_schema.name is required: 1 to 64 letters, digits, '_' or '-'.",
            ),
            (
                with(json!({"tools": {"a": 1}})),
                "tools",
                "tools must be an array of function tools.",
            ),
            (
                with(json!({"tools": [{"type": "function", "function": {"name": "bad name"}}]})),
                "tools[0].function.name",
                "A function name is 1 to 64 letters, digits, '_' or '-'.",
            ),
            (
                with(json!({
                    "tools": [{"type": "function", "function": {"name": "a"}}],
                    "tool_choice": {"type": "function", "function": {"name": "b"}},
                })),
                "tool_choice.function.name",
                "tool_choice names 'b', which is not one of the tools.",
            ),
            (
                with(json!({"tool_choice": "required"})),
                "tool_choice",
                "tool_choice 'required' needs tools.",
            ),
            (
                with(json!({"reasoning_effort": "high"})),
                "reasoning_effort",
                "The model 'm' does not accept reasoning_effort 'high'; it takes no reasoning_effort.",
            ),
            (
                with(json!({"repetition_penalty": 0})),
                "repetition_penalty",
                "repetition_penalty must be a number above 0.",
            ),
            (with(json!({"user": 5})), "user", "user must be a string."),
            (
                with(json!({"prompt_cache_key": "k".repeat(1025)})),
                "prompt_cache_key",
                "prompt_cache_key is longer than 1024 bytes.",
            ),
            (
                json!({"model": "m"}),
                "messages",
                "messages is required.",
            ),
            (
                with(json!({"messages": []})),
                "messages",
                "messages must contain at least one message.",
            ),
            (
                with(json!({"messages": "Hi"})),
                "messages",
                "messages must be an array.",
            ),
            (
                with(json!({"messages": [1]})),
                "messages[0]",
                "Each message must be an object.",
            ),
            (
                with(json!({"messages": [{"role": "robot", "content": "Hi"}]})),
                "messages[0].role",
                "role must be one of system, developer, user, assistant, tool.",
            ),
            (
                with(json!({"messages": [{"role": "user"}]})),
                "messages[0].content",
                "A user message needs content.",
            ),
            (
                with(json!({"messages": user(json!([{"type": "x"}]))})),
                "messages[0].content[0].type",
                "Content part type must be one of text, image_url, video_url, audio_url, input_audio, file; got 'x'.",
            ),
            (
                with(json!({"messages": user(json!([{"type": "image_url", "image_url": {"url": "ftp://a/b.png"}}]))})),
                "messages[0].content[0].image_url.url",
                "The image URL must be an http(s) URL, a base64 data URL, or a file id.",
            ),
            (
                with(json!({"messages": user(json!([{"type": "video_url", "video_url": {"url": "https://a/b.mp4"}}]))})),
                "messages[0].content[0]",
                "The model 'm' does not support video input; this content needs a model with the 'video' capability.",
            ),
            (
                with(json!({"messages": [
                    {"role": "user", "content": "Hi"},
                    {"role": "tool", "tool_call_id": "c1", "content": "42"},
                ]})),
                "messages[1].tool_call_id",
                "tool_call_id 'c1' answers no tool call of an earlier assistant message.",
            ),
            (
                with(json!({"messages": [
                    {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "a"}}]},
                ]})),
                "messages[0].tool_calls[0].function.arguments",
                "function.arguments must be a JSON-encoded string.",
            ),
        ];
        for (body, param, message) in cases {
            let shown = body.to_string();
            assert_eq!(
                refusal(&catalog, body),
                (param.to_owned(), message.to_owned()),
                "{shown}"
            );
        }
    }
}
