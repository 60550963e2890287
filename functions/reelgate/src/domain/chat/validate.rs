//! Validation of a chat completions request, by hand over the JSON so that every failure names
//! its `param` the way OpenAI does (`temperature`, `messages[1].content[0].type`, …). What
//! passes becomes the typed request sent upstream ([`ChatCompletionRequest`]): only the
//! parameters the contract knows, each as the caller gave it, so an upstream never sees
//! something we did not check.

use crate::domain::catalog::{Catalog, ChatModel};
use crate::domain::chat::request::{
    self, ChatCompletionRequest, ChatMessage, Range, Role, Stop, StreamOptions,
};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::Params;
use serde_json::{Map, Number, Value};
use std::collections::HashSet;

/// Every top-level parameter the contract accepts; anything else is refused, as OpenAI does.
const KNOWN_PARAMS: &[&str] = &[
    "model",
    "messages",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "n",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "frequency_penalty",
    "presence_penalty",
    "logprobs",
    "top_logprobs",
    "logit_bias",
    "response_format",
    "seed",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "top_k",
    "min_p",
    "repetition_penalty",
    "user",
    "prompt_cache_key",
];

/// Longest `prompt_cache_key` taken (OpenAI documents no limit; this keeps it a key).
const MAX_PROMPT_CACHE_KEY_BYTES: usize = 1024;

const PART_TYPES: &str = "text, image_url, video_url, audio_url, input_audio, file";
const AUDIO_FORMATS: &[&str] = &[
    "wav", "mp3", "flac", "ogg", "opus", "aac", "m4a", "webm", "pcm16",
];

/// A content part that refers to an uploaded file; resolved (ownership, kind, signed URL) by
/// the handler once validation has passed.
#[derive(Clone, Debug, PartialEq)]
pub struct FileRef {
    pub message: usize,
    pub part: usize,
    pub file_id: String,
    /// The parameter path to name in errors about this file.
    pub param: String,
    /// Set for an `image_url` part that names a file: the file must be an image.
    pub image_detail: Option<Option<String>>,
}

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

/// 400 `model_capability_mismatch` naming the part that needs `capability`.
pub fn capability_mismatch(model: &ChatModel, capability: &str, param: &str) -> ApiError {
    ApiError::new(
        crate::domain::error::ErrorKind::InvalidRequest,
        "model_capability_mismatch",
        format!(
            "The model '{}' does not support {capability} input; this content needs a model with the '{capability}' capability.",
            model.id
        ),
    )
    .with_param(param)
}

pub fn require_capability(model: &ChatModel, capability: &str, param: &str) -> ApiResult<()> {
    if model.capabilities.iter().any(|c| c == capability) {
        Ok(())
    } else {
        Err(capability_mismatch(model, capability, param))
    }
}

/// Resolves `model` against the catalog: unknown → 404 `model_not_found`; a video model →
/// 400 `model_not_chat_capable`.
pub fn chat_model<'a>(catalog: &'a Catalog, body: &Value) -> ApiResult<&'a ChatModel> {
    chat_model_of(catalog, body.get("model"))
}

/// [`chat_model`] of a body's `model` value.
fn chat_model_of<'a>(catalog: &'a Catalog, model: Option<&Value>) -> ApiResult<&'a ChatModel> {
    let id = match model {
        None | Some(Value::Null) => return Err(ApiError::invalid("model", "model is required.")),
        Some(Value::String(s)) if !s.is_empty() => s.as_str(),
        Some(_) => {
            return Err(ApiError::invalid(
                "model",
                "model must be a non-empty string.",
            ))
        }
    };
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

pub fn validate(catalog: &Catalog, body: Value) -> ApiResult<Validated> {
    let Value::Object(obj) = body else {
        return Err(ApiError::bad_request(
            "The request body must be a JSON object.",
        ));
    };
    let model = chat_model_of(catalog, obj.get("model"))?;
    for key in obj.keys() {
        if !KNOWN_PARAMS.contains(&key.as_str()) {
            return Err(ApiError::invalid(
                key,
                format!("Unrecognized request argument supplied: {key}"),
            ));
        }
    }
    let mut v = V { obj, model };

    let stream = v.params().boolean("stream")?.unwrap_or(false);
    let include_usage = match v.get("stream_options") {
        None => false,
        Some(opts) => {
            if !stream {
                return Err(ApiError::invalid(
                    "stream_options",
                    "stream_options is only allowed when stream is true.",
                ));
            }
            let opts = opts.as_object().ok_or_else(|| {
                ApiError::invalid("stream_options", "stream_options must be an object.")
            })?;
            for key in opts.keys() {
                if key != "include_usage" {
                    return Err(ApiError::invalid(
                        &format!("stream_options.{key}"),
                        format!("Unrecognized stream option: {key}"),
                    ));
                }
            }
            match opts.get("include_usage") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    return Err(ApiError::invalid(
                        "stream_options.include_usage",
                        "stream_options.include_usage must be a boolean.",
                    ))
                }
            }
        }
    };

    let temperature = v.number("temperature", request::TEMPERATURE)?;
    let top_p = v.number("top_p", request::TOP_P)?;
    let n = v.integer("n", request::N)?;
    let max_tokens = v.integer("max_tokens", request::MAX_TOKENS)?;
    let max_completion_tokens = v.integer("max_completion_tokens", request::MAX_TOKENS)?;
    if max_tokens.is_some() && max_completion_tokens.is_some() {
        return Err(ApiError::invalid(
            "max_tokens",
            "Give max_completion_tokens or the deprecated max_tokens, not both.",
        ));
    }
    let stop = v.stop()?;
    let frequency_penalty = v.number("frequency_penalty", request::PENALTY)?;
    let presence_penalty = v.number("presence_penalty", request::PENALTY)?;
    let logprobs = v.params().boolean("logprobs")?;
    let top_logprobs = v.integer("top_logprobs", request::TOP_LOGPROBS)?;
    if top_logprobs.is_some() && logprobs != Some(true) {
        return Err(ApiError::invalid(
            "top_logprobs",
            "top_logprobs requires logprobs to be true.",
        ));
    }
    let logit_bias = v.logit_bias()?;
    let response_format = v.response_format()?;
    let seed = v.integer("seed", request::SEED)?;
    let (tools, tool_names) = v.tools()?;
    let tool_choice = v.tool_choice(&tool_names)?;
    let parallel_tool_calls = v.params().boolean("parallel_tool_calls")?;
    let reasoning_effort = v.reasoning_effort()?;
    let top_k = v.integer("top_k", request::TOP_K)?;
    let min_p = v.number("min_p", request::MIN_P)?;
    let repetition_penalty = v.positive("repetition_penalty")?;
    let user = v.params().string("user")?.map(str::to_owned);
    let prompt_cache_key = v.params().string("prompt_cache_key")?.map(str::to_owned);
    if prompt_cache_key
        .as_ref()
        .is_some_and(|k| k.len() > MAX_PROMPT_CACHE_KEY_BYTES)
    {
        return Err(ApiError::invalid(
            "prompt_cache_key",
            format!("prompt_cache_key is longer than {MAX_PROMPT_CACHE_KEY_BYTES} bytes."),
        ));
    }
    let (messages, files, prompt_chars) = v.messages()?;
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
        parallel_tool_calls,
        reasoning_effort,
        top_k,
        min_p,
        repetition_penalty,
        user,
        thinking_budget: None,
        prompt_cache_key,
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

/// The rules over a body they own: each parameter is read (and refused by name) where it is
/// checked, and a large value (messages, tools, ...) is moved out into the typed request rather
/// than copied.
struct V<'a> {
    obj: Map<String, Value>,
    model: &'a ChatModel,
}

fn tool_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl V<'_> {
    /// The body's parameters, read by the one parameter reader (`domain::params`).
    fn params(&self) -> Params<'_> {
        Params::new(&self.obj)
    }

    /// A parameter's value; an explicit `null` counts as absent, as it does for OpenAI.
    fn get(&self, name: &str) -> Option<&Value> {
        self.params().get(name)
    }

    /// Moves a checked parameter's value out of the body (`None` for an absent or null one).
    fn take(&mut self, name: &str) -> Option<Value> {
        self.obj.remove(name).filter(|v| !v.is_null())
    }

    /// A checked number, as the caller wrote it.
    fn take_number(&mut self, name: &str) -> Option<Number> {
        match self.take(name) {
            Some(Value::Number(n)) => Some(n),
            _ => None,
        }
    }

    fn number(&mut self, name: &str, range: Range<f64>) -> ApiResult<Option<Number>> {
        self.params().number(name, range.min, range.max)?;
        Ok(self.take_number(name))
    }

    fn positive(&mut self, name: &str) -> ApiResult<Option<Number>> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        match value.as_f64() {
            Some(n) if n > 0.0 => Ok(self.take_number(name)),
            _ => Err(ApiError::invalid(
                name,
                format!("{name} must be a number above 0."),
            )),
        }
    }

    fn integer(&mut self, name: &str, range: Range<i64>) -> ApiResult<Option<Number>> {
        self.params().integer(name, range.min, range.max)?;
        Ok(self.take_number(name))
    }

    fn stop(&mut self) -> ApiResult<Option<Stop>> {
        let Some(value) = self.get("stop") else {
            return Ok(None);
        };
        match value {
            Value::String(_) => {}
            Value::Array(items) => {
                if items.len() > request::MAX_STOP {
                    return Err(ApiError::invalid(
                        "stop",
                        format!("stop takes at most {} sequences.", request::MAX_STOP),
                    ));
                }
                for (i, s) in items.iter().enumerate() {
                    if !s.is_string() {
                        return Err(ApiError::invalid(
                            &format!("stop[{i}]"),
                            "Each stop sequence must be a string.",
                        ));
                    }
                }
            }
            _ => {
                return Err(ApiError::invalid(
                    "stop",
                    "stop must be a string or an array of up to 4 strings.",
                ))
            }
        }
        Ok(match self.take("stop") {
            Some(Value::String(s)) => Some(Stop::One(s)),
            Some(Value::Array(items)) => Some(Stop::Many(
                items
                    .into_iter()
                    .filter_map(|s| match s {
                        Value::String(s) => Some(s),
                        _ => None,
                    })
                    .collect(),
            )),
            _ => None,
        })
    }

    fn logit_bias(&mut self) -> ApiResult<Option<Map<String, Value>>> {
        let Some(value) = self.get("logit_bias") else {
            return Ok(None);
        };
        let map = value.as_object().ok_or_else(|| {
            ApiError::invalid(
                "logit_bias",
                "logit_bias must be an object of token id to bias.",
            )
        })?;
        for (token, bias) in map {
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
        Ok(match self.take("logit_bias") {
            Some(Value::Object(map)) => Some(map),
            _ => None,
        })
    }

    fn response_format(&mut self) -> ApiResult<Option<Value>> {
        let Some(value) = self.get("response_format") else {
            return Ok(None);
        };
        let rf = value.as_object().ok_or_else(|| {
            ApiError::invalid("response_format", "response_format must be an object.")
        })?;
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
                require_capability(self.model, "json_schema", "response_format")?;
            }
            _ => {
                return Err(ApiError::invalid(
                    "response_format.type",
                    "response_format.type must be text, json_object or json_schema.",
                ))
            }
        }
        Ok(self.take("response_format"))
    }

    /// Returns the tools and their function names.
    fn tools(&mut self) -> ApiResult<(Option<Vec<Value>>, Vec<String>)> {
        let Some(value) = self.get("tools") else {
            return Ok((None, Vec::new()));
        };
        let tools = value.as_array().ok_or_else(|| {
            ApiError::invalid("tools", "tools must be an array of function tools.")
        })?;
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
            require_capability(self.model, "tools", "tools")?;
        }
        let tools = match self.take("tools") {
            Some(Value::Array(tools)) => Some(tools),
            _ => None,
        };
        Ok((tools, names))
    }

    fn tool_choice(&mut self, names: &[String]) -> ApiResult<Option<Value>> {
        let Some(value) = self.get("tool_choice") else {
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
            Value::String(_) => return Err(ApiError::invalid(
                "tool_choice",
                "tool_choice must be none, auto, required or {type: function, function: {name}}.",
            )),
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
        Ok(self.take("tool_choice"))
    }

    fn reasoning_effort(&mut self) -> ApiResult<Option<String>> {
        let Some(value) = self.get("reasoning_effort") else {
            return Ok(None);
        };
        let effort = value.as_str().ok_or_else(|| {
            ApiError::invalid("reasoning_effort", "reasoning_effort must be a string.")
        })?;
        if !self.model.reasoning_efforts.iter().any(|e| e == effort) {
            let accepted = if self.model.reasoning_efforts.is_empty() {
                "it takes no reasoning_effort".to_owned()
            } else {
                format!("it accepts {}", self.model.reasoning_efforts.join(", "))
            };
            return Err(ApiError::new(
                crate::domain::error::ErrorKind::InvalidRequest,
                "unsupported_reasoning_effort",
                format!(
                    "The model '{}' does not accept reasoning_effort '{effort}'; {accepted}.",
                    self.model.id
                ),
            )
            .with_param("reasoning_effort"));
        }
        Ok(Some(effort.to_owned()))
    }

    /// The messages as sent upstream, the file parts to resolve, and the prompt's text length.
    /// Each message is checked, then its values are moved into the typed message.
    fn messages(&mut self) -> ApiResult<(Vec<ChatMessage>, Vec<FileRef>, usize)> {
        let messages = match self.obj.remove("messages") {
            None | Some(Value::Null) => {
                return Err(ApiError::invalid("messages", "messages is required."))
            }
            Some(Value::Array(m)) if m.is_empty() => {
                return Err(ApiError::invalid(
                    "messages",
                    "messages must contain at least one message.",
                ))
            }
            Some(Value::Array(m)) => m,
            Some(_) => return Err(ApiError::invalid("messages", "messages must be an array.")),
        };
        let mut out = Vec::with_capacity(messages.len());
        let mut files = Vec::new();
        let mut chars = 0usize;
        let mut call_ids: HashSet<String> = HashSet::new();
        for (i, message) in messages.into_iter().enumerate() {
            let p = format!("messages[{i}]");
            let Value::Object(mut m) = message else {
                return Err(ApiError::invalid(&p, "Each message must be an object."));
            };
            let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
            let Some(role) = Role::parse(role) else {
                return Err(ApiError::invalid(
                    &format!("{p}.role"),
                    "role must be one of system, developer, user, assistant, tool.",
                ));
            };
            let name = match m.remove("name").filter(|n| !n.is_null()) {
                None => None,
                Some(Value::String(name)) => Some(name),
                Some(_) => {
                    return Err(ApiError::invalid(
                        &format!("{p}.name"),
                        "name must be a string.",
                    ))
                }
            };
            let content = m.remove("content").filter(|c| !c.is_null());
            let cp = format!("{p}.content");
            let mut fwd = ChatMessage {
                name,
                ..ChatMessage::new(role.upstream())
            };
            match role {
                Role::User => {
                    let content = content
                        .ok_or_else(|| ApiError::invalid(&cp, "A user message needs content."))?;
                    chars += self.user_content(&content, i, &cp, &mut files)?;
                    fwd.content = Some(content);
                }
                Role::Assistant => {
                    let calls = self.tool_calls(&mut m, &p, &mut call_ids)?;
                    if let Some(content) = content {
                        chars += text_content(&content, &cp, &["text", "refusal"])?;
                        fwd.content = Some(content);
                    } else if calls.is_none() {
                        return Err(ApiError::invalid(
                            &cp,
                            "An assistant message needs content or tool_calls.",
                        ));
                    } else {
                        fwd.content = Some(Value::Null);
                    }
                    fwd.tool_calls = calls;
                }
                Role::Tool => {
                    let id_param = format!("{p}.tool_call_id");
                    let id = match m.remove("tool_call_id") {
                        Some(Value::String(id)) => id,
                        _ => {
                            return Err(ApiError::invalid(
                                &id_param,
                                "A tool message needs tool_call_id (a string).",
                            ))
                        }
                    };
                    if !call_ids.contains(&id) {
                        return Err(ApiError::invalid(
                            &id_param,
                            format!("tool_call_id '{id}' answers no tool call of an earlier assistant message."),
                        ));
                    }
                    let content = content
                        .ok_or_else(|| ApiError::invalid(&cp, "A tool message needs content."))?;
                    chars += text_content(&content, &cp, &["text"])?;
                    fwd.tool_call_id = Some(id);
                    fwd.content = Some(content);
                }
                Role::System | Role::Developer => {
                    let content = content
                        .ok_or_else(|| ApiError::invalid(&cp, "A system message needs content."))?;
                    chars += text_content(&content, &cp, &["text"])?;
                    fwd.content = Some(content);
                }
            }
            // Other keys (`refusal`, `annotations`, `audio` echoed back from an earlier reply by
            // SDKs) carry nothing an upstream needs and are dropped with `m`.
            out.push(fwd);
        }
        Ok((out, files, chars))
    }

    /// An assistant message's tool calls, checked and moved out of it (`None` for none).
    fn tool_calls(
        &self,
        m: &mut Map<String, Value>,
        p: &str,
        call_ids: &mut HashSet<String>,
    ) -> ApiResult<Option<Value>> {
        let Some(calls) = m.remove("tool_calls").filter(|c| !c.is_null()) else {
            return Ok(None);
        };
        let tp = format!("{p}.tool_calls");
        let list = calls
            .as_array()
            .ok_or_else(|| ApiError::invalid(&tp, "tool_calls must be an array."))?;
        if list.is_empty() {
            return Ok(None);
        }
        require_capability(self.model, "tools", &tp)?;
        for (k, call) in list.iter().enumerate() {
            let cp = format!("{tp}[{k}]");
            let id = call.get("id").and_then(Value::as_str).ok_or_else(|| {
                ApiError::invalid(&format!("{cp}.id"), "A tool call needs an id (a string).")
            })?;
            if call.get("type").and_then(Value::as_str) != Some("function") {
                return Err(ApiError::invalid(
                    &format!("{cp}.type"),
                    "A tool call's type must be 'function'.",
                ));
            }
            let f = call.get("function");
            if !f.and_then(|f| f.get("name")).is_some_and(Value::is_string) {
                return Err(ApiError::invalid(
                    &format!("{cp}.function.name"),
                    "A tool call needs function.name.",
                ));
            }
            if !f
                .and_then(|f| f.get("arguments"))
                .is_some_and(Value::is_string)
            {
                return Err(ApiError::invalid(
                    &format!("{cp}.function.arguments"),
                    "function.arguments must be a JSON-encoded string.",
                ));
            }
            call_ids.insert(id.to_owned());
        }
        Ok(Some(calls))
    }

    /// A user message's content: a string, or parts of the contract's types. File parts are
    /// recorded for the handler to resolve.
    fn user_content(
        &self,
        content: &Value,
        message: usize,
        cp: &str,
        files: &mut Vec<FileRef>,
    ) -> ApiResult<usize> {
        let parts = match content {
            Value::String(s) => return Ok(s.chars().count()),
            Value::Array(parts) if parts.is_empty() => {
                return Err(ApiError::invalid(cp, "content must not be an empty array."))
            }
            Value::Array(parts) => parts,
            _ => {
                return Err(ApiError::invalid(
                    cp,
                    "content must be a string or an array of content parts.",
                ))
            }
        };
        let mut chars = 0;
        for (j, part) in parts.iter().enumerate() {
            let pp = format!("{cp}[{j}]");
            let obj = part
                .as_object()
                .ok_or_else(|| ApiError::invalid(&pp, "Each content part must be an object."))?;
            let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
            // Images, audio, video and files count towards the estimate charged when the
            // upstream reports no usage.
            chars += crate::domain::billing::token_charges::part_estimate_chars(kind);
            match kind {
                "text" => {
                    let text = obj.get("text").and_then(Value::as_str).ok_or_else(|| {
                        ApiError::invalid(
                            &format!("{pp}.text"),
                            "A text part needs text (a string).",
                        )
                    })?;
                    chars += text.chars().count();
                }
                "image_url" => {
                    let ip = format!("{pp}.image_url");
                    let image =
                        obj.get("image_url")
                            .and_then(Value::as_object)
                            .ok_or_else(|| {
                                ApiError::invalid(
                                    &ip,
                                    "An image_url part needs an image_url object.",
                                )
                            })?;
                    let detail = match image.get("detail").filter(|d| !d.is_null()) {
                        None => None,
                        Some(Value::String(d)) if ["auto", "low", "high"].contains(&d.as_str()) => {
                            Some(d.clone())
                        }
                        Some(_) => {
                            return Err(ApiError::invalid(
                                &format!("{ip}.detail"),
                                "detail must be auto, low or high.",
                            ))
                        }
                    };
                    // An image may also name an uploaded file: `{file_id}` or a url that is a file id.
                    let file_id = image.get("file_id").and_then(Value::as_str).or_else(|| {
                        image
                            .get("url")
                            .and_then(Value::as_str)
                            .filter(|u| u.starts_with("file_"))
                    });
                    if let Some(file_id) = file_id {
                        require_capability(self.model, "vision", &pp)?;
                        files.push(FileRef {
                            message,
                            part: j,
                            file_id: file_id.to_owned(),
                            param: format!("{ip}.file_id"),
                            image_detail: Some(detail),
                        });
                    } else {
                        let url = image.get("url").and_then(Value::as_str).unwrap_or_default();
                        check_media_url(url, "image", &format!("{ip}.url"))?;
                        require_capability(self.model, "vision", &pp)?;
                    }
                }
                "video_url" | "audio_url" => {
                    let media = if kind == "video_url" {
                        "video"
                    } else {
                        "audio"
                    };
                    let up = format!("{pp}.{kind}");
                    let url = obj
                        .get(kind)
                        .and_then(|o| o.get("url"))
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            ApiError::invalid(
                                &format!("{up}.url"),
                                format!("A {kind} part needs {kind}.url."),
                            )
                        })?;
                    check_media_url(url, media, &format!("{up}.url"))?;
                    require_capability(self.model, media, &pp)?;
                }
                "input_audio" => {
                    let ap = format!("{pp}.input_audio");
                    let audio = obj
                        .get("input_audio")
                        .and_then(Value::as_object)
                        .ok_or_else(|| {
                            ApiError::invalid(&ap, "An input_audio part needs {data, format}.")
                        })?;
                    let data = audio
                        .get("data")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if data.is_empty() || !is_base64(data) {
                        return Err(ApiError::invalid(
                            &format!("{ap}.data"),
                            "input_audio.data must be base64-encoded audio.",
                        ));
                    }
                    let format = audio
                        .get("format")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !AUDIO_FORMATS.contains(&format) {
                        return Err(ApiError::invalid(
                            &format!("{ap}.format"),
                            format!(
                                "input_audio.format must be one of {}.",
                                AUDIO_FORMATS.join(", ")
                            ),
                        ));
                    }
                    require_capability(self.model, "audio", &pp)?;
                }
                "file" => {
                    let fp = format!("{pp}.file");
                    let file = obj.get("file").and_then(Value::as_object).ok_or_else(|| {
                        ApiError::invalid(&fp, "A file part needs a file object with file_id.")
                    })?;
                    if let Some(id) = file.get("file_id").filter(|v| !v.is_null()) {
                        let id = id.as_str().ok_or_else(|| {
                            ApiError::invalid(&format!("{fp}.file_id"), "file_id must be a string.")
                        })?;
                        files.push(FileRef {
                            message,
                            part: j,
                            file_id: id.to_owned(),
                            param: format!("{fp}.file_id"),
                            image_detail: None,
                        });
                    } else if let Some(data) = file.get("file_data").and_then(Value::as_str) {
                        if !(data.starts_with("data:") || is_base64(data)) {
                            return Err(ApiError::invalid(
                                &format!("{fp}.file_data"),
                                "file_data must be a base64 data URL.",
                            ));
                        }
                        require_capability(self.model, "file", &pp)?;
                    } else {
                        return Err(ApiError::invalid(
                            &format!("{fp}.file_id"),
                            "A file part needs file.file_id.",
                        ));
                    }
                }
                _ => {
                    return Err(ApiError::invalid(
                        &format!("{pp}.type"),
                        format!("Content part type must be one of {PART_TYPES}; got '{kind}'."),
                    ))
                }
            }
        }
        Ok(chars)
    }
}

/// Text content: a string, or an array of parts whose types are in `allowed`.
fn text_content(content: &Value, cp: &str, allowed: &[&str]) -> ApiResult<usize> {
    match content {
        Value::String(s) => Ok(s.chars().count()),
        Value::Array(parts) => {
            let mut chars = 0;
            for (j, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
                if !allowed.contains(&kind) {
                    return Err(ApiError::invalid(
                        &format!("{cp}[{j}].type"),
                        format!(
                            "Parts of this message must be of type {}.",
                            allowed.join(" or ")
                        ),
                    ));
                }
                let text = part.get(kind).and_then(Value::as_str).ok_or_else(|| {
                    ApiError::invalid(
                        &format!("{cp}[{j}].{kind}"),
                        format!("A {kind} part needs {kind} (a string)."),
                    )
                })?;
                chars += text.chars().count();
            }
            Ok(chars)
        }
        _ => Err(ApiError::invalid(cp, "content must be a string.")),
    }
}

/// An http(s) URL, or a base64 data URL of the right media type.
fn check_media_url(url: &str, media: &str, param: &str) -> ApiResult<()> {
    if let Some(rest) = url.strip_prefix("data:") {
        let ok = rest.split_once(',').is_some_and(|(meta, data)| {
            meta.starts_with(&format!("{media}/")) && meta.ends_with(";base64") && is_base64(data)
        });
        if !ok {
            return Err(ApiError::invalid(
                param,
                format!("A data URL must be data:{media}/<type>;base64,<data>."),
            ));
        }
        return Ok(());
    }
    match url::Url::parse(url) {
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => Ok(()),
        _ => Err(ApiError::invalid(
            param,
            format!("The {media} URL must be an http(s) URL, a base64 data URL, or a file id."),
        )),
    }
}

fn is_base64(data: &str) -> bool {
    data.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'))
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
        let e = validate(catalog, body).expect_err("refused");
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
