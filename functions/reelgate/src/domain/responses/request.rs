//! The body of `POST /v1/responses`: every parameter of the spec's table checked for type and
//! range before anything else happens, each failure naming its parameter. Checks that need the
//! model (reasoning efforts) or the store (references, files) happen later, in `convert`.

use crate::domain::catalog::ChatModel;
use crate::domain::chat::request::{TEMPERATURE, TOP_P};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{self, Params};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Parameters OpenAI's SDK may send that this service accepts and ignores: they change nothing
/// in the bridged chat request (`include` asks for extra output fields we do not produce).
const IGNORED: &[&str] = &["include", "service_tier", "safety_identifier"];

/// How many `metadata` pairs, and how long keys and values may be (OpenAI's limits).
const METADATA_MAX_PAIRS: usize = 16;
const METADATA_MAX_KEY: usize = 64;
const METADATA_MAX_VALUE: usize = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ResponseTruncation)]
pub enum Truncation {
    Auto,
    Disabled,
}

impl Truncation {
    pub fn as_str(self) -> &'static str {
        match self {
            Truncation::Auto => "auto",
            Truncation::Disabled => "disabled",
        }
    }
}

/// `reasoning`: an effort the model accepts (`GET /v1/models`) and the summary asked for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
#[schema(as = ResponseReasoning)]
pub struct Reasoning {
    pub effort: Option<String>,
    pub summary: Option<String>,
}

/// `text`: the output's format.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[schema(as = ResponseText)]
pub struct Text {
    /// `{type: text}` (the default), `{type: json_object}` or `{type: json_schema, name,
    /// schema, strict}`.
    #[schema(value_type = Object)]
    pub format: Value,
}

/// Up to `METADATA_MAX_PAIRS` pairs of strings.
/// The fewest output tokens a request may allow.
pub const MIN_OUTPUT_TOKENS: u64 = 1;
/// The largest `repetition_penalty` (it must also be above 0).
pub const REPETITION_PENALTY_MAX: f64 = 2.0;

fn max_output_tokens_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
        .minimum(Some(MIN_OUTPUT_TOKENS))
        .into()
}

fn repetition_penalty_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Number, Type::Null]))
        .exclusive_minimum(Some(0))
        .maximum(Some(REPETITION_PENALTY_MAX))
        .into()
}

fn metadata_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .max_properties(Some(METADATA_MAX_PAIRS))
        .additional_properties(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(METADATA_MAX_VALUE)),
        ))
        .property_names(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .max_length(Some(METADATA_MAX_KEY)),
        ))
        .into()
}

/// A string or an array of input items.
fn input_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Type};
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::String))
        .item(ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::Object)))
        .into()
}

/// `POST /v1/responses`: OpenAI's Responses request, checked. `input` is still raw items (a
/// string is one user message): their shapes are checked while they are resolved (references
/// and files need the store). `background: true` is refused; `include`, `service_tier` and
/// `safety_identifier` are accepted and ignored.
#[derive(Clone, Debug, ToSchema)]
#[schema(as = ResponseCreateRequest, example = json!({"model": "llama-3.1-8b", "input": "Hello"}))]
pub struct CreateRequest {
    #[schema(min_length = 1)]
    pub model: String,
    #[schema(schema_with = input_schema, required = true)]
    pub input: Vec<Value>,
    pub instructions: Option<String>,
    /// `true` answers `text/event-stream` of typed events (`response.created`, ...).
    #[schema(required = false, default = false)]
    pub stream: bool,
    #[schema(required = false, default = true)]
    pub store: bool,
    #[schema(schema_with = crate::domain::chat::request::temperature_schema)]
    pub temperature: Option<f64>,
    #[schema(schema_with = crate::domain::chat::request::top_p_schema)]
    pub top_p: Option<f64>,
    #[schema(schema_with = max_output_tokens_schema)]
    pub max_output_tokens: Option<u64>,
    /// Function tools in the Responses shape (`{type, name, description, parameters, strict}`).
    #[schema(value_type = Vec<Object>, required = false)]
    pub tools: Vec<Value>,
    /// `none`, `auto`, `required` or `{type: function, name}`.
    #[schema(schema_with = crate::domain::chat::request::tool_choice_schema)]
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    #[schema(required = false)]
    pub reasoning: Reasoning,
    #[schema(required = false)]
    pub truncation: Truncation,
    pub previous_response_id: Option<String>,
    #[schema(schema_with = metadata_schema, required = false)]
    pub metadata: Map<String, Value>,
    #[schema(required = false)]
    pub text: Text,
    pub seed: Option<i64>,
    /// A string or an array of strings.
    #[schema(value_type = Option<Object>)]
    pub stop: Option<Value>,
    pub top_k: Option<u64>,
    /// Above 0, at most `REPETITION_PENALTY_MAX`.
    #[schema(schema_with = repetition_penalty_schema)]
    pub repetition_penalty: Option<f64>,
    pub user: Option<String>,
    /// Passed to OpenAI-compatible upstreams, which route their prompt cache by it.
    pub prompt_cache_key: Option<String>,
}

/// A string parameter, owned.
fn string(p: Params<'_>, name: &str) -> ApiResult<Option<String>> {
    Ok(p.string(name)?.map(str::to_owned))
}

/// A whole number of at least `min`.
fn unsigned(p: Params<'_>, name: &str, min: u64) -> ApiResult<Option<u64>> {
    Ok(p.integer(name, min as i64, i64::MAX)?.map(|n| n as u64))
}

impl CreateRequest {
    /// Checks the body's shape and every parameter's type and range.
    pub fn parse(body: Value) -> ApiResult<Self> {
        let Value::Object(body) = body else {
            return Err(ApiError::bad_request(
                "The request body must be a JSON object.",
            ));
        };
        for key in body.keys() {
            if !KNOWN.contains(&key.as_str()) && !IGNORED.contains(&key.as_str()) {
                return Err(ApiError::invalid(
                    key,
                    format!("Unrecognized request argument supplied: {key}."),
                ));
            }
        }
        let p = Params::new(&body);
        if p.boolean("background")? == Some(true) {
            return Err(ApiError::invalid(
                "background",
                "Background responses are not supported; use stream or a plain request.",
            ));
        }

        let model = string(p, "model")?
            .filter(|m| !m.is_empty())
            .ok_or_else(|| params::required("model"))?;

        let input = match p.get("input") {
            None => return Err(params::required("input")),
            // A string is one user message.
            Some(Value::String(s)) => vec![serde_json::json!({"role": "user", "content": s})],
            Some(Value::Array(items)) => items.clone(),
            Some(_) => {
                return Err(ApiError::invalid(
                    "input",
                    "input must be a string or an array of input items.",
                ))
            }
        };

        let tools = parse_tools(p.get("tools"))?;
        let tool_choice = parse_tool_choice(p.get("tool_choice"), &tools)?;
        let (reasoning_effort, reasoning_summary) = parse_reasoning(p.get("reasoning"))?;

        let truncation = match p.string("truncation")? {
            None | Some("disabled") => Truncation::Disabled,
            Some("auto") => Truncation::Auto,
            Some(_) => {
                return Err(ApiError::invalid(
                    "truncation",
                    "truncation must be auto or disabled.",
                ))
            }
        };

        let previous_response_id = string(p, "previous_response_id")?;
        let metadata = parse_metadata(p.get("metadata"))?;
        let text_format = parse_text(p.get("text"))?;

        let seed = match p.get("seed") {
            None => None,
            Some(v) => Some(
                v.as_i64()
                    .ok_or_else(|| params::wrong_type("seed", "an integer"))?,
            ),
        };
        let stop = parse_stop(p.get("stop"))?;

        let repetition_penalty = match p.get("repetition_penalty") {
            None => None,
            Some(v) => match v.as_f64() {
                Some(x) if x > 0.0 && x <= REPETITION_PENALTY_MAX => Some(x),
                _ => {
                    return Err(ApiError::invalid(
                        "repetition_penalty",
                        format!(
                            "repetition_penalty must be a number above 0 and at most {REPETITION_PENALTY_MAX}."
                        ),
                    ))
                }
            },
        };

        Ok(CreateRequest {
            model,
            input,
            instructions: string(p, "instructions")?,
            stream: p.boolean("stream")?.unwrap_or(false),
            // Stored by default, as in OpenAI's API.
            store: p.boolean("store")?.unwrap_or(true),
            temperature: p.number("temperature", TEMPERATURE.min, TEMPERATURE.max)?,
            top_p: p.number("top_p", TOP_P.min, TOP_P.max)?,
            max_output_tokens: unsigned(p, "max_output_tokens", MIN_OUTPUT_TOKENS)?,
            tools,
            tool_choice,
            parallel_tool_calls: p.boolean("parallel_tool_calls")?,
            reasoning: Reasoning {
                effort: reasoning_effort,
                summary: reasoning_summary,
            },
            truncation,
            previous_response_id,
            metadata,
            text: Text {
                format: text_format,
            },
            seed,
            stop,
            top_k: unsigned(p, "top_k", 0)?,
            repetition_penalty,
            user: string(p, "user")?,
            prompt_cache_key: string(p, "prompt_cache_key")?,
        })
    }

    /// Checks what depends on the model: its reasoning efforts and its tool capability.
    pub fn check_model(&self, model: &ChatModel) -> ApiResult<()> {
        if let Some(effort) = &self.reasoning.effort {
            if !model.reasoning_efforts.iter().any(|e| e == effort) {
                let accepted = if model.reasoning_efforts.is_empty() {
                    "none (the model takes no reasoning effort)".to_owned()
                } else {
                    model.reasoning_efforts.join(", ")
                };
                return Err(ApiError::invalid(
                    "reasoning.effort",
                    format!(
                        "Reasoning effort '{effort}' is not accepted by {}; accepted: {accepted}.",
                        model.id
                    ),
                )
                .with_code("unsupported_reasoning_effort"));
            }
        }
        if !self.tools.is_empty() && !model.capabilities.iter().any(|c| c == "tools") {
            return Err(ApiError::invalid(
                "tools",
                format!("{} does not support tools.", model.id),
            )
            .with_code("model_capability_mismatch"));
        }
        if self.text.format.get("type").and_then(Value::as_str) == Some("json_schema")
            && !model.capabilities.iter().any(|c| c == "json_schema")
        {
            return Err(ApiError::invalid(
                "text.format",
                format!(
                    "{} does not support structured output (json_schema).",
                    model.id
                ),
            )
            .with_code("model_capability_mismatch"));
        }
        Ok(())
    }
}

const KNOWN: &[&str] = &[
    "model",
    "input",
    "instructions",
    "stream",
    "temperature",
    "top_p",
    "max_output_tokens",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "truncation",
    "previous_response_id",
    "store",
    "metadata",
    "text",
    "seed",
    "stop",
    "top_k",
    "repetition_penalty",
    "user",
    "prompt_cache_key",
    "background",
];

fn valid_function_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn parse_tools(tools: Option<&Value>) -> ApiResult<Vec<Value>> {
    let Some(tools) = tools else {
        return Ok(Vec::new());
    };
    let Some(tools) = tools.as_array() else {
        return Err(ApiError::invalid("tools", "tools must be an array."));
    };
    let mut names = std::collections::HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let at = |what: &str| format!("tools[{i}]{what}");
        let Some(obj) = tool.as_object() else {
            return Err(ApiError::invalid(&at(""), "Each tool must be an object."));
        };
        match obj.get("type").and_then(Value::as_str) {
            Some("function") => {}
            Some(other) => {
                return Err(ApiError::invalid(
                    &at(".type"),
                    format!("Tool type '{other}' is not supported; only function tools are."),
                ))
            }
            None => return Err(ApiError::invalid(&at(".type"), "Each tool needs a type.")),
        }
        let name = obj.get("name").and_then(Value::as_str).unwrap_or_default();
        if !valid_function_name(name) {
            return Err(ApiError::invalid(
                &at(".name"),
                "A function name has 1 to 64 characters: letters, digits, '_' or '-'.",
            ));
        }
        if !names.insert(name.to_owned()) {
            return Err(ApiError::invalid(
                &at(".name"),
                format!("Two tools are named '{name}'."),
            ));
        }
        if let Some(p) = obj.get("parameters").filter(|p| !p.is_null()) {
            if !p.is_object() {
                return Err(ApiError::invalid(
                    &at(".parameters"),
                    "parameters must be a JSON-schema object.",
                ));
            }
        }
        if let Some(d) = obj.get("description").filter(|d| !d.is_null()) {
            if !d.is_string() {
                return Err(ApiError::invalid(
                    &at(".description"),
                    "description must be a string.",
                ));
            }
        }
        if let Some(s) = obj.get("strict").filter(|s| !s.is_null()) {
            if !s.is_boolean() {
                return Err(ApiError::invalid(
                    &at(".strict"),
                    "strict must be a boolean.",
                ));
            }
        }
    }
    Ok(tools.clone())
}

fn parse_tool_choice(choice: Option<&Value>, tools: &[Value]) -> ApiResult<Option<Value>> {
    let Some(choice) = choice else {
        return Ok(None);
    };
    match choice {
        Value::String(s) if s == "none" || s == "auto" => Ok(Some(choice.clone())),
        Value::String(s) if s == "required" => {
            if tools.is_empty() {
                return Err(ApiError::invalid(
                    "tool_choice",
                    "tool_choice 'required' needs at least one tool in tools.",
                ));
            }
            Ok(Some(choice.clone()))
        }
        Value::Object(obj) if obj.get("type").and_then(Value::as_str) == Some("function") => {
            let name = obj.get("name").and_then(Value::as_str).unwrap_or_default();
            if !tools
                .iter()
                .any(|t| t.get("name").and_then(Value::as_str) == Some(name))
            {
                return Err(ApiError::invalid(
                    "tool_choice",
                    format!("tool_choice names the function '{name}', which is not in tools."),
                ));
            }
            Ok(Some(choice.clone()))
        }
        _ => Err(ApiError::invalid(
            "tool_choice",
            "tool_choice must be none, auto, required or {\"type\": \"function\", \"name\": ...}.",
        )),
    }
}

fn parse_reasoning(reasoning: Option<&Value>) -> ApiResult<(Option<String>, Option<String>)> {
    let Some(reasoning) = reasoning else {
        return Ok((None, None));
    };
    let Some(obj) = reasoning.as_object() else {
        return Err(ApiError::invalid(
            "reasoning",
            "reasoning must be an object {effort, summary}.",
        ));
    };
    for key in obj.keys() {
        if !["effort", "summary", "generate_summary"].contains(&key.as_str()) {
            return Err(ApiError::invalid(
                &format!("reasoning.{key}"),
                format!("Unrecognized reasoning argument: {key}."),
            ));
        }
    }
    let effort = match obj.get("effort") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(ApiError::invalid(
                "reasoning.effort",
                "reasoning.effort must be a string.",
            ))
        }
    };
    // `generate_summary` is the deprecated name of `summary`.
    let summary = match obj.get("summary").or_else(|| obj.get("generate_summary")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if ["auto", "concise", "detailed"].contains(&s.as_str()) => {
            Some(s.clone())
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "reasoning.summary",
                "reasoning.summary must be auto, concise or detailed.",
            ))
        }
    };
    Ok((effort, summary))
}

fn parse_metadata(metadata: Option<&Value>) -> ApiResult<Map<String, Value>> {
    let Some(metadata) = metadata else {
        return Ok(Map::new());
    };
    let Some(obj) = metadata.as_object() else {
        return Err(ApiError::invalid(
            "metadata",
            "metadata must be an object of string values.",
        ));
    };
    if obj.len() > METADATA_MAX_PAIRS {
        return Err(ApiError::invalid(
            "metadata",
            format!("metadata holds at most {METADATA_MAX_PAIRS} pairs."),
        ));
    }
    for (k, v) in obj {
        if k.chars().count() > METADATA_MAX_KEY {
            return Err(ApiError::invalid(
                "metadata",
                format!("metadata keys have at most {METADATA_MAX_KEY} characters."),
            ));
        }
        match v.as_str() {
            Some(s) if s.chars().count() <= METADATA_MAX_VALUE => {}
            _ => {
                return Err(ApiError::invalid(
                    "metadata",
                    format!(
                        "metadata values are strings of at most {METADATA_MAX_VALUE} characters."
                    ),
                ))
            }
        }
    }
    Ok(obj.clone())
}

fn parse_text(text: Option<&Value>) -> ApiResult<Value> {
    let default = serde_json::json!({"type": "text"});
    let Some(text) = text else {
        return Ok(default);
    };
    let Some(obj) = text.as_object() else {
        return Err(ApiError::invalid(
            "text",
            "text must be an object {format}.",
        ));
    };
    let Some(format) = obj.get("format").filter(|f| !f.is_null()) else {
        return Ok(default);
    };
    let Some(f) = format.as_object() else {
        return Err(ApiError::invalid(
            "text.format",
            "text.format must be an object.",
        ));
    };
    match f.get("type").and_then(Value::as_str) {
        Some("text") | Some("json_object") => Ok(format.clone()),
        Some("json_schema") => {
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            if !valid_function_name(name) {
                return Err(ApiError::invalid(
                    "text.format.name",
                    "A json_schema format needs a name of 1 to 64 letters, digits, '_' or '-'.",
                ));
            }
            if !f.get("schema").is_some_and(Value::is_object) {
                return Err(ApiError::invalid(
                    "text.format.schema",
                    "A json_schema format needs a schema object.",
                ));
            }
            Ok(format.clone())
        }
        _ => Err(ApiError::invalid(
            "text.format.type",
            "text.format.type must be text, json_object or json_schema.",
        )),
    }
}

fn parse_stop(stop: Option<&Value>) -> ApiResult<Option<Value>> {
    match stop {
        None => Ok(None),
        Some(Value::String(_)) => Ok(stop.cloned()),
        Some(Value::Array(seqs)) if seqs.len() <= 4 && seqs.iter().all(Value::is_string) => {
            Ok(stop.cloned())
        }
        Some(_) => Err(ApiError::invalid(
            "stop",
            "stop must be a string or an array of at most 4 strings.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(body: Value) -> ApiError {
        CreateRequest::parse(body).expect_err("should be refused")
    }

    /// The `param` (empty for none) and message a body is refused with.
    fn refusal(body: Value) -> (String, String) {
        let e = err(body);
        (e.param.unwrap_or_default(), e.message)
    }

    /// `model: m` and `input: "x"`, with `extra`'s parameters over them.
    fn with(extra: Value) -> Value {
        let mut body = json!({"model": "m", "input": "x"});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        body
    }

    #[test]
    fn refusals_name_their_param_and_sentence() {
        let function = |name: &str| json!({"type": "function", "name": name});
        let summary = "reasoning.summary must be auto, concise or detailed.";
        let metadata_values = "metadata values are strings of at most 512 characters.";
        let stop = "stop must be a string or an array of at most 4 strings.";
        let tool_choice =
            "tool_choice must be none, auto, required or {\"type\": \"function\", \"name\": ...}.";
        let schema_name =
            "A json_schema format needs a name of 1 to 64 letters, digits, '_' or '-'.";
        let repetition = "repetition_penalty must be a number above 0 and at most 2.";
        let many_pairs: serde_json::Map<String, Value> =
            (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
        let cases: Vec<(Value, &str, &str)> = vec![
            (json!([1]), "", "The request body must be a JSON object."),
            (json!("x"), "", "The request body must be a JSON object."),
            (json!({"input": "x"}), "model", "model is required."),
            (with(json!({"model": null})), "model", "model is required."),
            (with(json!({"model": ""})), "model", "model is required."),
            (
                with(json!({"model": 5})),
                "model",
                "model must be a string.",
            ),
            (json!({"model": "m"}), "input", "input is required."),
            (with(json!({"input": null})), "input", "input is required."),
            (
                with(json!({"input": 3})),
                "input",
                "input must be a string or an array of input items.",
            ),
            (
                with(json!({"input": {"role": "user", "content": "x"}})),
                "input",
                "input must be a string or an array of input items.",
            ),
            (
                with(json!({"frobnicate": true})),
                "frobnicate",
                "Unrecognized request argument supplied: frobnicate.",
            ),
            (
                with(json!({"background": true})),
                "background",
                "Background responses are not supported; use stream or a plain request.",
            ),
            (
                with(json!({"background": "no"})),
                "background",
                "background must be a boolean.",
            ),
            (
                with(json!({"instructions": 1})),
                "instructions",
                "instructions must be a string.",
            ),
            (
                with(json!({"stream": "yes"})),
                "stream",
                "stream must be a boolean.",
            ),
            (
                with(json!({"store": 1})),
                "store",
                "store must be a boolean.",
            ),
            (
                with(json!({"temperature": "1"})),
                "temperature",
                "temperature must be a number.",
            ),
            (
                with(json!({"temperature": 2.5})),
                "temperature",
                "temperature must be a number from 0 to 2; got 2.5.",
            ),
            (
                with(json!({"top_p": -0.1})),
                "top_p",
                "top_p must be a number from 0 to 1; got -0.1.",
            ),
            (
                with(json!({"max_output_tokens": 0})),
                "max_output_tokens",
                "max_output_tokens must be an integer of at least 1; got 0.",
            ),
            (
                with(json!({"max_output_tokens": 1.5})),
                "max_output_tokens",
                "max_output_tokens must be an integer.",
            ),
            (
                with(json!({"max_output_tokens": "10"})),
                "max_output_tokens",
                "max_output_tokens must be an integer.",
            ),
            (
                with(json!({"tools": {}})),
                "tools",
                "tools must be an array.",
            ),
            (
                with(json!({"tools": [1]})),
                "tools[0]",
                "Each tool must be an object.",
            ),
            (
                with(json!({"tools": [{"type": "web_search"}]})),
                "tools[0].type",
                "Tool type 'web_search' is not supported; only function tools are.",
            ),
            (
                with(json!({"tools": [{"name": "f"}]})),
                "tools[0].type",
                "Each tool needs a type.",
            ),
            (
                with(json!({"tools": [function("a b")]})),
                "tools[0].name",
                "A function name has 1 to 64 characters: letters, digits, '_' or '-'.",
            ),
            (
                with(json!({"tools": [function("f"), function("f")]})),
                "tools[1].name",
                "Two tools are named 'f'.",
            ),
            (
                with(json!({"tools": [{"type": "function", "name": "f", "parameters": 1}]})),
                "tools[0].parameters",
                "parameters must be a JSON-schema object.",
            ),
            (
                with(json!({"tools": [{"type": "function", "name": "f", "description": 1}]})),
                "tools[0].description",
                "description must be a string.",
            ),
            (
                with(json!({"tools": [{"type": "function", "name": "f", "strict": "yes"}]})),
                "tools[0].strict",
                "strict must be a boolean.",
            ),
            (
                with(json!({"tool_choice": "required"})),
                "tool_choice",
                "tool_choice 'required' needs at least one tool in tools.",
            ),
            (
                with(json!({"tools": [function("f")], "tool_choice": function("g")})),
                "tool_choice",
                "tool_choice names the function 'g', which is not in tools.",
            ),
            (
                with(json!({"tool_choice": "maybe"})),
                "tool_choice",
                tool_choice,
            ),
            (with(json!({"tool_choice": 1})), "tool_choice", tool_choice),
            (
                with(json!({"parallel_tool_calls": "no"})),
                "parallel_tool_calls",
                "parallel_tool_calls must be a boolean.",
            ),
            (
                with(json!({"reasoning": "high"})),
                "reasoning",
                "reasoning must be an object {effort, summary}.",
            ),
            (
                with(json!({"reasoning": ["high"]})),
                "reasoning",
                "reasoning must be an object {effort, summary}.",
            ),
            (
                with(json!({"reasoning": {"level": 1}})),
                "reasoning.level",
                "Unrecognized reasoning argument: level.",
            ),
            (
                with(json!({"reasoning": {"effort": 1}})),
                "reasoning.effort",
                "reasoning.effort must be a string.",
            ),
            (
                with(json!({"reasoning": {"summary": "long"}})),
                "reasoning.summary",
                summary,
            ),
            (
                with(json!({"reasoning": {"generate_summary": 1}})),
                "reasoning.summary",
                summary,
            ),
            (
                with(json!({"truncation": "sometimes"})),
                "truncation",
                "truncation must be auto or disabled.",
            ),
            (
                with(json!({"truncation": 1})),
                "truncation",
                "truncation must be a string.",
            ),
            (
                with(json!({"previous_response_id": 1})),
                "previous_response_id",
                "previous_response_id must be a string.",
            ),
            (
                with(json!({"metadata": "x"})),
                "metadata",
                "metadata must be an object of string values.",
            ),
            (
                with(json!({"metadata": many_pairs})),
                "metadata",
                "metadata holds at most 16 pairs.",
            ),
            (
                with(json!({"metadata": {("k".repeat(65)): "v"}})),
                "metadata",
                "metadata keys have at most 64 characters.",
            ),
            (
                with(json!({"metadata": {"k": 1}})),
                "metadata",
                metadata_values,
            ),
            (
                with(json!({"metadata": {"k": "v".repeat(513)}})),
                "metadata",
                metadata_values,
            ),
            (
                with(json!({"text": "json"})),
                "text",
                "text must be an object {format}.",
            ),
            (
                with(json!({"text": {"format": "json"}})),
                "text.format",
                "text.format must be an object.",
            ),
            (
                with(json!({"text": {"format": {"type": "yaml"}}})),
                "text.format.type",
                "text.format.type must be text, json_object or json_schema.",
            ),
            (
                with(json!({"text": {"format": {"type": "json_schema", "schema": {}}}})),
                "text.format.name",
                schema_name,
            ),
            (
                with(json!({"text": {"format": {"type": "json_schema", "name": "s"}}})),
                "text.format.schema",
                "A json_schema format needs a schema object.",
            ),
            (
                with(json!({"seed": "1"})),
                "seed",
                "seed must be an integer.",
            ),
            (
                with(json!({"seed": 1.5})),
                "seed",
                "seed must be an integer.",
            ),
            (with(json!({"stop": 5})), "stop", stop),
            (with(json!({"stop": ["a", 1]})), "stop", stop),
            (
                with(json!({"stop": ["a", "b", "c", "d", "e"]})),
                "stop",
                stop,
            ),
            (
                with(json!({"top_k": -1})),
                "top_k",
                "top_k must be an integer of at least 0; got -1.",
            ),
            (
                with(json!({"top_k": "1"})),
                "top_k",
                "top_k must be an integer.",
            ),
            (
                with(json!({"repetition_penalty": 0})),
                "repetition_penalty",
                repetition,
            ),
            (
                with(json!({"repetition_penalty": 2.5})),
                "repetition_penalty",
                repetition,
            ),
            (
                with(json!({"repetition_penalty": "1"})),
                "repetition_penalty",
                repetition,
            ),
            (with(json!({"user": 1})), "user", "user must be a string."),
            (
                with(json!({"prompt_cache_key": 1})),
                "prompt_cache_key",
                "prompt_cache_key must be a string.",
            ),
        ];
        assert!(cases.len() >= 30);
        for (body, param, message) in cases {
            assert_eq!(
                refusal(body.clone()),
                (param.to_owned(), message.to_owned()),
                "{body}"
            );
        }
    }

    #[test]
    fn null_is_absent_and_the_ignored_parameters_are_dropped() {
        let r = CreateRequest::parse(with(json!({
            "stream": null, "store": null, "temperature": null, "tools": null,
            "tool_choice": null, "reasoning": null, "truncation": null, "metadata": null,
            "text": null, "seed": null, "stop": null, "background": false,
            "include": ["reasoning.encrypted_content"], "service_tier": "auto",
            "safety_identifier": "s",
        })))
        .expect("valid");
        assert!(r.store && !r.stream && r.tools.is_empty() && r.tool_choice.is_none());
        assert_eq!(r.text.format, json!({"type": "text"}));
        assert_eq!(r.truncation, Truncation::Disabled);
        assert!(r.temperature.is_none() && r.seed.is_none() && r.stop.is_none());
        let r = CreateRequest::parse(with(json!({
            "input": [{"role": "user", "content": "a"}], "truncation": "auto",
            "reasoning": {"effort": "low", "generate_summary": "concise"},
            "text": {"format": {"type": "json_schema", "name": "s", "schema": {}}},
            "stop": ["a"], "seed": -3, "top_k": 0, "max_output_tokens": 5,
        })))
        .expect("valid");
        assert_eq!(r.input, vec![json!({"role": "user", "content": "a"})]);
        assert_eq!(r.truncation, Truncation::Auto);
        assert_eq!(r.reasoning.effort.as_deref(), Some("low"));
        assert_eq!(r.reasoning.summary.as_deref(), Some("concise"));
        assert_eq!(r.text.format["name"], json!("s"));
        assert_eq!(r.stop, Some(json!(["a"])));
        assert_eq!(
            (r.seed, r.top_k, r.max_output_tokens),
            (Some(-3), Some(0), Some(5))
        );
    }

    #[test]
    fn string_input_becomes_a_user_message_and_store_defaults_on() {
        let r = CreateRequest::parse(json!({"model": "m", "input": "hi"})).expect("valid");
        assert_eq!(r.input, vec![json!({"role": "user", "content": "hi"})]);
        assert!(r.store);
        assert!(!r.stream);
        assert_eq!(r.truncation, Truncation::Disabled);
    }

    #[test]
    fn ranges_name_their_parameter() {
        let cases = [
            (
                json!({"model": "m", "input": "x", "temperature": 2.5}),
                "temperature",
            ),
            (json!({"model": "m", "input": "x", "top_p": -0.1}), "top_p"),
            (
                json!({"model": "m", "input": "x", "max_output_tokens": 0}),
                "max_output_tokens",
            ),
            (
                json!({"model": "m", "input": "x", "stop": ["a", "b", "c", "d", "e"]}),
                "stop",
            ),
            (
                json!({"model": "m", "input": "x", "truncation": "sometimes"}),
                "truncation",
            ),
            (
                json!({"model": "m", "input": "x", "reasoning": {"summary": "long"}}),
                "reasoning.summary",
            ),
            (
                json!({"model": "m", "input": "x", "tool_choice": "required"}),
                "tool_choice",
            ),
            (
                json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]}),
                "tools[0].type",
            ),
            (
                json!({"model": "m", "input": "x", "text": {"format": {"type": "yaml"}}}),
                "text.format.type",
            ),
            (
                json!({"model": "m", "input": "x", "repetition_penalty": 0}),
                "repetition_penalty",
            ),
            (json!({"model": "m", "input": "x", "top_k": -1}), "top_k"),
            (json!({"model": "m", "input": "x", "seed": "1"}), "seed"),
            (
                json!({"model": "m", "input": "x", "metadata": {"k": 1}}),
                "metadata",
            ),
            (
                json!({"model": "m", "input": "x", "frobnicate": true}),
                "frobnicate",
            ),
            (json!({"model": "m", "input": 3}), "input"),
            (json!({"input": "x"}), "model"),
        ];
        for (body, param) in cases {
            let e = err(body.clone());
            assert_eq!(crate::api::envelope::status(e.kind).as_u16(), 400, "{body}");
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
    }
}
