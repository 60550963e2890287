//! Validation of a chat completions request, by hand over the JSON so that every failure names
//! its `param` the way OpenAI does (`temperature`, `messages[1].content[0].type`, …). What
//! passes becomes the body sent upstream: only the parameters the contract knows, each as the
//! caller gave it, so an upstream never sees something we did not check.

use crate::domain::catalog::{Catalog, ChatModel};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::Params;
use serde_json::{Map, Value};
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
];

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
    /// The body for the upstream, without `model` (the handler sets the upstream's name).
    pub upstream_body: Map<String, Value>,
    pub stream: bool,
    pub include_usage: bool,
    pub files: Vec<FileRef>,
    /// Characters of text in the prompt plus a character equivalent of every other input part
    /// (`usage::part_estimate_chars`), for a usage estimate when the upstream reports none.
    pub prompt_chars: usize,
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
    let id = match body.get("model") {
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

pub fn validate(catalog: &Catalog, body: &Value) -> ApiResult<Validated> {
    let obj = body
        .as_object()
        .ok_or_else(|| ApiError::bad_request("The request body must be a JSON object."))?;
    let model = chat_model(catalog, body)?;
    for key in obj.keys() {
        if !KNOWN_PARAMS.contains(&key.as_str()) {
            return Err(ApiError::invalid(
                key,
                format!("Unrecognized request argument supplied: {key}"),
            ));
        }
    }
    let mut v = V {
        obj,
        model,
        out: Map::new(),
    };

    let stream = v.boolean("stream")?.unwrap_or(false);
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

    v.number("temperature", 0.0, 2.0)?;
    v.number("top_p", 0.0, 1.0)?;
    v.integer("n", 1, 128)?;
    let max_tokens = v.integer("max_tokens", 1, i64::MAX)?;
    let max_completion = v.integer("max_completion_tokens", 1, i64::MAX)?;
    if max_tokens.is_some() && max_completion.is_some() {
        return Err(ApiError::invalid(
            "max_tokens",
            "Give max_completion_tokens or the deprecated max_tokens, not both.",
        ));
    }
    v.stop()?;
    v.number("frequency_penalty", -2.0, 2.0)?;
    v.number("presence_penalty", -2.0, 2.0)?;
    let logprobs = v.boolean("logprobs")?.unwrap_or(false);
    if v.integer("top_logprobs", 0, 20)?.is_some() && !logprobs {
        return Err(ApiError::invalid(
            "top_logprobs",
            "top_logprobs requires logprobs to be true.",
        ));
    }
    v.logit_bias()?;
    v.response_format()?;
    v.integer("seed", i64::MIN, i64::MAX)?;
    let tool_names = v.tools()?;
    v.tool_choice(&tool_names)?;
    v.boolean("parallel_tool_calls")?;
    v.reasoning_effort()?;
    v.integer("top_k", -1, i64::MAX)?;
    v.number("min_p", 0.0, 1.0)?;
    v.positive("repetition_penalty")?;
    v.string("user")?;
    let (messages, files, prompt_chars) = v.messages()?;
    v.out.insert("messages".into(), Value::Array(messages));
    if stream {
        v.out.insert("stream".into(), Value::Bool(true));
        // Always ask the upstream for usage: billing needs it even when the caller does not.
        v.out.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    Ok(Validated {
        model: model.clone(),
        upstream_body: v.out,
        stream,
        include_usage,
        files,
        prompt_chars,
    })
}

struct V<'a> {
    obj: &'a Map<String, Value>,
    model: &'a ChatModel,
    out: Map<String, Value>,
}

fn tool_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl<'a> V<'a> {
    /// The body's parameters, read by the one parameter reader (`domain::params`).
    fn params(&self) -> Params<'a> {
        Params::new(self.obj)
    }

    /// A parameter's value; an explicit `null` counts as absent, as it does for OpenAI.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.params().get(name)
    }

    /// Keeps a parameter that was read (for the upstream request) and passes its value on.
    fn kept<T>(&mut self, name: &str, read: Option<T>) -> Option<T> {
        if let (Some(_), Some(value)) = (&read, self.get(name)) {
            self.keep(name, value);
        }
        read
    }

    fn keep(&mut self, name: &str, value: &Value) {
        self.out.insert(name.to_owned(), value.clone());
    }

    fn number(&mut self, name: &str, min: f64, max: f64) -> ApiResult<Option<f64>> {
        let n = self.params().number(name, min, max)?;
        Ok(self.kept(name, n))
    }

    fn positive(&mut self, name: &str) -> ApiResult<()> {
        let Some(value) = self.get(name) else {
            return Ok(());
        };
        match value.as_f64() {
            Some(n) if n > 0.0 => {
                self.keep(name, value);
                Ok(())
            }
            _ => Err(ApiError::invalid(
                name,
                format!("{name} must be a number above 0."),
            )),
        }
    }

    fn integer(&mut self, name: &str, min: i64, max: i64) -> ApiResult<Option<i64>> {
        let n = self.params().integer(name, min, max)?;
        Ok(self.kept(name, n))
    }

    fn boolean(&mut self, name: &str) -> ApiResult<Option<bool>> {
        let b = self.params().boolean(name)?;
        if name == "stream" {
            return Ok(b);
        }
        Ok(self.kept(name, b))
    }

    fn string(&mut self, name: &str) -> ApiResult<Option<&'a str>> {
        let s = self.params().string(name)?;
        Ok(self.kept(name, s))
    }

    fn stop(&mut self) -> ApiResult<()> {
        let Some(value) = self.get("stop") else {
            return Ok(());
        };
        match value {
            Value::String(_) => {}
            Value::Array(items) => {
                if items.len() > 4 {
                    return Err(ApiError::invalid("stop", "stop takes at most 4 sequences."));
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
        self.keep("stop", value);
        Ok(())
    }

    fn logit_bias(&mut self) -> ApiResult<()> {
        let Some(value) = self.get("logit_bias") else {
            return Ok(());
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
                Some(b) if (-100.0..=100.0).contains(&b) => {}
                _ => {
                    return Err(ApiError::invalid(
                        &param,
                        "Each logit_bias value must be a number from -100 to 100.",
                    ))
                }
            }
        }
        self.keep("logit_bias", value);
        Ok(())
    }

    fn response_format(&mut self) -> ApiResult<()> {
        let Some(value) = self.get("response_format") else {
            return Ok(());
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
        self.keep("response_format", value);
        Ok(())
    }

    /// Returns the declared function names.
    fn tools(&mut self) -> ApiResult<Vec<String>> {
        let Some(value) = self.get("tools") else {
            return Ok(Vec::new());
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
        self.keep("tools", value);
        Ok(names)
    }

    fn tool_choice(&mut self, names: &[String]) -> ApiResult<()> {
        let Some(value) = self.get("tool_choice") else {
            return Ok(());
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
        self.keep("tool_choice", value);
        Ok(())
    }

    fn reasoning_effort(&mut self) -> ApiResult<()> {
        let Some(value) = self.get("reasoning_effort") else {
            return Ok(());
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
        self.keep("reasoning_effort", value);
        Ok(())
    }

    /// The messages as sent upstream, the file parts to resolve, and the prompt's text length.
    fn messages(&mut self) -> ApiResult<(Vec<Value>, Vec<FileRef>, usize)> {
        let messages = match self.obj.get("messages") {
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
        for (i, message) in messages.iter().enumerate() {
            let p = format!("messages[{i}]");
            let m = message
                .as_object()
                .ok_or_else(|| ApiError::invalid(&p, "Each message must be an object."))?;
            let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
            let mut fwd = Map::new();
            // `developer` is OpenAI's newer name for `system`; open-weight chat templates know only
            // `system`, so it travels as that.
            let upstream_role = match role {
                "system" | "developer" => "system",
                "user" | "assistant" | "tool" => role,
                _ => {
                    return Err(ApiError::invalid(
                        &format!("{p}.role"),
                        "role must be one of system, developer, user, assistant, tool.",
                    ))
                }
            };
            fwd.insert("role".into(), upstream_role.into());
            if let Some(name) = m.get("name").filter(|n| !n.is_null()) {
                if !name.is_string() {
                    return Err(ApiError::invalid(
                        &format!("{p}.name"),
                        "name must be a string.",
                    ));
                }
                fwd.insert("name".into(), name.clone());
            }
            let content = m.get("content").filter(|c| !c.is_null());
            let cp = format!("{p}.content");
            match role {
                "user" => {
                    let content = content
                        .ok_or_else(|| ApiError::invalid(&cp, "A user message needs content."))?;
                    let (value, n) = self.user_content(content, i, &cp, &mut files)?;
                    chars += n;
                    fwd.insert("content".into(), value);
                }
                "assistant" => {
                    let calls = self.tool_calls(m, &p, &mut call_ids)?;
                    if let Some(content) = content {
                        chars += text_content(content, &cp, &["text", "refusal"])?;
                        fwd.insert("content".into(), content.clone());
                    } else if calls.is_none() {
                        return Err(ApiError::invalid(
                            &cp,
                            "An assistant message needs content or tool_calls.",
                        ));
                    } else {
                        fwd.insert("content".into(), Value::Null);
                    }
                    if let Some(calls) = calls {
                        fwd.insert("tool_calls".into(), calls);
                    }
                }
                "tool" => {
                    let id_param = format!("{p}.tool_call_id");
                    let id = m
                        .get("tool_call_id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            ApiError::invalid(
                                &id_param,
                                "A tool message needs tool_call_id (a string).",
                            )
                        })?;
                    if !call_ids.contains(id) {
                        return Err(ApiError::invalid(
                            &id_param,
                            format!("tool_call_id '{id}' answers no tool call of an earlier assistant message."),
                        ));
                    }
                    let content = content
                        .ok_or_else(|| ApiError::invalid(&cp, "A tool message needs content."))?;
                    chars += text_content(content, &cp, &["text"])?;
                    fwd.insert("tool_call_id".into(), id.into());
                    fwd.insert("content".into(), content.clone());
                }
                _ => {
                    let content = content
                        .ok_or_else(|| ApiError::invalid(&cp, "A system message needs content."))?;
                    chars += text_content(content, &cp, &["text"])?;
                    fwd.insert("content".into(), content.clone());
                }
            }
            // Other keys (`refusal`, `annotations`, `audio` echoed back from an earlier reply by
            // SDKs) carry nothing an upstream needs and are dropped.
            out.push(Value::Object(fwd));
        }
        Ok((out, files, chars))
    }

    fn tool_calls(
        &self,
        m: &Map<String, Value>,
        p: &str,
        call_ids: &mut HashSet<String>,
    ) -> ApiResult<Option<Value>> {
        let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) else {
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
        Ok(Some(calls.clone()))
    }

    /// A user message's content: a string, or parts of the contract's types. File parts are
    /// recorded for the handler to resolve.
    fn user_content(
        &self,
        content: &Value,
        message: usize,
        cp: &str,
        files: &mut Vec<FileRef>,
    ) -> ApiResult<(Value, usize)> {
        let parts = match content {
            Value::String(s) => return Ok((content.clone(), s.chars().count())),
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
        Ok((content.clone(), chars))
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
