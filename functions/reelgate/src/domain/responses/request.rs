//! The body of `POST /v1/responses` as serde reads it ([`ResponseCreateBody`]): every parameter
//! of the spec's table with its type, an unknown one refused by name, each refusal naming its
//! parameter; [`RequestBody::check`] holds the rules a shape cannot state (ranges, required
//! values, tool names, formats), and [`CreateRequest`] is the checked request with its defaults.
//! The parts passed upstream as given (input items, tool definitions, `tool_choice`,
//! `text.format`) stay JSON values. Checks that need the model (reasoning efforts) or the store
//! (references, files) happen later, in `convert`.

use crate::domain::catalog::ChatModel;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::params::{self, optional_object, FaultKind, RequestBody, ShapeFault};
use crate::ports::upstream::request::{TEMPERATURE, TOP_P};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use utoipa::ToSchema;

/// How many `metadata` pairs, and how long keys and values may be (OpenAI's limits).
const METADATA_MAX_PAIRS: usize = 16;
const METADATA_MAX_KEY: usize = 64;
const METADATA_MAX_VALUE: usize = 512;
/// The most stop sequences a request may give.
const MAX_STOP_SEQUENCES: usize = 4;

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

/// `POST /v1/responses` as sent: OpenAI's Responses request. JSON `null` is a parameter not
/// given, as OpenAI's SDKs send it. `input`'s items are checked while they are resolved
/// (references and files need the store). `background: true` is refused; `include`,
/// `service_tier` and `safety_identifier` are accepted and ignored (they change nothing in the
/// bridged chat request: `include` asks for output fields this service does not produce).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ResponseCreateRequest, example = json!({"model": "llama-3.1-8b", "input": "Hello"}))]
pub struct ResponseCreateBody {
    #[schema(value_type = String, required = true, min_length = 1)]
    pub model: Option<String>,
    #[schema(schema_with = input_schema, required = true)]
    pub input: Option<InputBody>,
    pub instructions: Option<String>,
    /// `true` answers `text/event-stream` of typed events (`response.created`, ...).
    #[schema(value_type = bool, required = false, default = false)]
    pub stream: Option<bool>,
    #[schema(value_type = bool, required = false, default = true)]
    pub store: Option<bool>,
    #[schema(schema_with = crate::ports::upstream::request::temperature_schema)]
    pub temperature: Option<f64>,
    #[schema(schema_with = crate::ports::upstream::request::top_p_schema)]
    pub top_p: Option<f64>,
    #[schema(schema_with = max_output_tokens_schema)]
    pub max_output_tokens: Option<Number>,
    /// Function tools in the Responses shape (`{type, name, description, parameters, strict}`).
    #[schema(value_type = Vec<Object>, required = false)]
    pub tools: Option<Vec<Value>>,
    /// `none`, `auto`, `required` or `{type: function, name}`.
    #[schema(schema_with = crate::ports::upstream::request::tool_choice_schema)]
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    #[schema(value_type = Reasoning, required = false)]
    #[serde(default, deserialize_with = "optional_object")]
    pub reasoning: Option<ReasoningBody>,
    // Read as a string so that a word other than `auto` or `disabled` is refused as such.
    #[schema(value_type = Truncation, required = false)]
    pub truncation: Option<String>,
    pub previous_response_id: Option<String>,
    #[schema(schema_with = metadata_schema, required = false)]
    pub metadata: Option<Map<String, Value>>,
    #[schema(value_type = Text, required = false)]
    #[serde(default, deserialize_with = "optional_object")]
    pub text: Option<TextBody>,
    #[schema(value_type = Option<i64>)]
    pub seed: Option<Number>,
    /// A string or an array of strings.
    #[schema(value_type = Option<Object>)]
    pub stop: Option<StopBody>,
    #[schema(value_type = Option<u64>)]
    pub top_k: Option<Number>,
    /// Above 0, at most `REPETITION_PENALTY_MAX`.
    #[schema(schema_with = repetition_penalty_schema)]
    pub repetition_penalty: Option<f64>,
    pub user: Option<String>,
    /// Passed to OpenAI-compatible upstreams, which route their prompt cache by it.
    pub prompt_cache_key: Option<String>,
    /// Only `false`: background responses are not supported.
    pub background: Option<bool>,
    /// Accepted and ignored.
    #[schema(value_type = Option<Vec<String>>)]
    #[serde(rename = "include")]
    _include: Option<IgnoredAny>,
    /// Accepted and ignored.
    #[schema(value_type = Option<String>)]
    #[serde(rename = "service_tier")]
    _service_tier: Option<IgnoredAny>,
    /// Accepted and ignored.
    #[schema(value_type = Option<String>)]
    #[serde(rename = "safety_identifier")]
    _safety_identifier: Option<IgnoredAny>,
}

/// `input`: a string (one user message) or an array of input items.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum InputBody {
    Text(String),
    Items(Vec<Value>),
}

/// `reasoning` as sent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningBody {
    pub effort: Option<String>,
    pub summary: Option<ReasoningSummary>,
    /// The deprecated name of `summary`, read when `summary` is not given.
    pub generate_summary: Option<ReasoningSummary>,
}

/// Read from a string: serde_json reads a unit enum from anything else as broken JSON.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(try_from = "String")]
pub enum ReasoningSummary {
    Auto,
    Concise,
    Detailed,
}

impl TryFrom<String> for ReasoningSummary {
    type Error = &'static str;

    fn try_from(summary: String) -> Result<Self, Self::Error> {
        match summary.as_str() {
            "auto" => Ok(ReasoningSummary::Auto),
            "concise" => Ok(ReasoningSummary::Concise),
            "detailed" => Ok(ReasoningSummary::Detailed),
            _ => Err(REASONING_SUMMARY_EXPECTED),
        }
    }
}

impl ReasoningSummary {
    fn as_str(self) -> &'static str {
        match self {
            ReasoningSummary::Auto => "auto",
            ReasoningSummary::Concise => "concise",
            ReasoningSummary::Detailed => "detailed",
        }
    }
}

/// `text` as sent; members other than `format` are not read.
#[derive(Debug, Deserialize)]
pub struct TextBody {
    pub format: Option<Map<String, Value>>,
}

/// `stop`: one sequence or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum StopBody {
    One(String),
    Many(Vec<String>),
}

const INPUT_EXPECTED: &str = "input must be a string or an array of input items.";
const REASONING_SUMMARY_EXPECTED: &str = "reasoning.summary must be auto, concise or detailed.";

fn stop_expected() -> String {
    format!("stop must be a string or an array of at most {MAX_STOP_SEQUENCES} strings.")
}

fn repetition_penalty_expected() -> String {
    format!("repetition_penalty must be a number above 0 and at most {REPETITION_PENALTY_MAX}.")
}

impl RequestBody for ResponseCreateBody {
    fn expected(param: &str, _path: &str) -> Option<String> {
        let wrong_type = |what| params::wrong_type(param, what).message;
        Some(match param {
            "model"
            | "instructions"
            | "truncation"
            | "previous_response_id"
            | "user"
            | "prompt_cache_key" => wrong_type("a string"),
            "stream" | "store" | "parallel_tool_calls" | "background" => wrong_type("a boolean"),
            "temperature" | "top_p" => wrong_type("a number"),
            "max_output_tokens" | "top_k" | "seed" => wrong_type("an integer"),
            "input" => INPUT_EXPECTED.to_owned(),
            "tools" => "tools must be an array.".to_owned(),
            "reasoning" => "reasoning must be an object {effort, summary}.".to_owned(),
            "metadata" => "metadata must be an object of string values.".to_owned(),
            "text" => "text must be an object {format}.".to_owned(),
            "stop" => stop_expected(),
            "repetition_penalty" => repetition_penalty_expected(),
            _ => return None,
        })
    }

    /// Unknown parameters (of the body and of `reasoning`) and the values inside `reasoning`
    /// and `text`, each named by its own path.
    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        let path = fault.path.as_str();
        match fault.kind {
            FaultKind::Unknown => Some(match path.strip_prefix("reasoning.") {
                Some(key) => {
                    ApiError::invalid(path, format!("Unrecognized reasoning argument: {key}."))
                }
                None => ApiError::invalid(
                    path,
                    format!("Unrecognized request argument supplied: {path}."),
                ),
            }),
            // Every parameter is optional to serde: `check` refuses a required one missing.
            FaultKind::Missing => None,
            FaultKind::WrongShape => match path {
                "reasoning.effort" => Some(ApiError::invalid(
                    path,
                    "reasoning.effort must be a string.",
                )),
                "reasoning.summary" | "reasoning.generate_summary" => Some(ApiError::invalid(
                    "reasoning.summary",
                    REASONING_SUMMARY_EXPECTED,
                )),
                "text.format" => Some(ApiError::invalid(path, "text.format must be an object.")),
                _ => None,
            },
        }
    }

    /// In the order the parameters were always checked in: `background`, the required ones,
    /// then the rest.
    fn check(self) -> ApiResult<Self> {
        if self.background == Some(true) {
            return Err(ApiError::invalid(
                "background",
                "Background responses are not supported; use stream or a plain request.",
            ));
        }
        if self.model.as_deref().is_none_or(str::is_empty) {
            return Err(params::required("model"));
        }
        if self.input.is_none() {
            return Err(params::required("input"));
        }
        let tools = self.tools.as_deref().unwrap_or_default();
        check_tools(tools)?;
        check_tool_choice(self.tool_choice.as_ref(), tools)?;
        truncation(self.truncation.as_deref())?;
        if let Some(metadata) = &self.metadata {
            check_metadata(metadata)?;
        }
        if let Some(format) = self.text.as_ref().and_then(|t| t.format.as_ref()) {
            check_text_format(format)?;
        }
        seed(self.seed.as_ref())?;
        if matches!(&self.stop, Some(StopBody::Many(seqs)) if seqs.len() > MAX_STOP_SEQUENCES) {
            return Err(ApiError::invalid("stop", stop_expected()));
        }
        if self
            .repetition_penalty
            .is_some_and(|x| x <= 0.0 || x > REPETITION_PENALTY_MAX)
        {
            return Err(ApiError::invalid(
                "repetition_penalty",
                repetition_penalty_expected(),
            ));
        }
        number(
            "temperature",
            self.temperature,
            TEMPERATURE.min,
            TEMPERATURE.max,
        )?;
        number("top_p", self.top_p, TOP_P.min, TOP_P.max)?;
        at_least(
            "max_output_tokens",
            self.max_output_tokens.as_ref(),
            MIN_OUTPUT_TOKENS,
        )?;
        at_least("top_k", self.top_k.as_ref(), 0)?;
        Ok(self)
    }
}

/// A number within `min..=max`.
fn number(name: &str, value: Option<f64>, min: f64, max: f64) -> ApiResult<()> {
    match value {
        Some(n) if !(min..=max).contains(&n) => Err(ApiError::invalid(
            name,
            format!("{name} must be a number from {min} to {max}; got {n}."),
        )),
        _ => Ok(()),
    }
}

/// A whole number of at least `min`, as a `u64` (one above `i64::MAX` counts as `i64::MAX`, as
/// the parameters' one reader has it).
fn at_least(name: &str, value: Option<&Number>, min: u64) -> ApiResult<Option<u64>> {
    let Some(v) = value else {
        return Ok(None);
    };
    let n = v
        .as_i64()
        .or_else(|| v.as_u64().map(|u| u.min(i64::MAX as u64) as i64))
        .ok_or_else(|| params::wrong_type(name, "an integer"))?;
    if n < min as i64 {
        return Err(ApiError::invalid(
            name,
            format!("{name} must be an integer of at least {min}; got {n}."),
        ));
    }
    Ok(Some(n as u64))
}

fn seed(seed: Option<&Number>) -> ApiResult<Option<i64>> {
    seed.map(|n| {
        n.as_i64()
            .ok_or_else(|| params::wrong_type("seed", "an integer"))
    })
    .transpose()
}

fn truncation(truncation: Option<&str>) -> ApiResult<Truncation> {
    match truncation {
        None | Some("disabled") => Ok(Truncation::Disabled),
        Some("auto") => Ok(Truncation::Auto),
        Some(_) => Err(ApiError::invalid(
            "truncation",
            "truncation must be auto or disabled.",
        )),
    }
}

/// A body [`RequestBody::check`] has passed, with its defaults: a string `input` is one user
/// message, `store` is on and the output is text unless asked otherwise.
impl From<ResponseCreateBody> for CreateRequest {
    fn from(body: ResponseCreateBody) -> CreateRequest {
        let input = match body.input {
            Some(InputBody::Text(s)) => vec![serde_json::json!({"role": "user", "content": s})],
            Some(InputBody::Items(items)) => items,
            None => Vec::new(),
        };
        let reasoning = body
            .reasoning
            .map_or_else(Reasoning::default, |r| Reasoning {
                effort: r.effort,
                summary: r
                    .summary
                    .or(r.generate_summary)
                    .map(|s| s.as_str().to_owned()),
            });
        let format = body
            .text
            .and_then(|t| t.format)
            .map_or_else(|| serde_json::json!({"type": "text"}), Value::Object);
        CreateRequest {
            model: body.model.unwrap_or_default(),
            input,
            instructions: body.instructions,
            stream: body.stream.unwrap_or(false),
            // Stored by default, as in OpenAI's API.
            store: body.store.unwrap_or(true),
            temperature: body.temperature,
            top_p: body.top_p,
            max_output_tokens: at_least(
                "max_output_tokens",
                body.max_output_tokens.as_ref(),
                MIN_OUTPUT_TOKENS,
            )
            .ok()
            .flatten(),
            tools: body.tools.unwrap_or_default(),
            tool_choice: body.tool_choice,
            parallel_tool_calls: body.parallel_tool_calls,
            reasoning,
            truncation: truncation(body.truncation.as_deref()).unwrap_or(Truncation::Disabled),
            previous_response_id: body.previous_response_id,
            metadata: body.metadata.unwrap_or_default(),
            text: Text { format },
            seed: seed(body.seed.as_ref()).ok().flatten(),
            stop: body.stop.map(|stop| match stop {
                StopBody::One(s) => Value::from(s),
                StopBody::Many(seqs) => Value::from(seqs),
            }),
            top_k: at_least("top_k", body.top_k.as_ref(), 0).ok().flatten(),
            repetition_penalty: body.repetition_penalty,
            user: body.user,
            prompt_cache_key: body.prompt_cache_key,
        }
    }
}

/// `POST /v1/responses`, checked, with its defaults ([`ResponseCreateBody`] as sent).
#[derive(Clone, Debug)]
pub struct CreateRequest {
    pub model: String,
    pub input: Vec<Value>,
    pub instructions: Option<String>,
    pub stream: bool,
    pub store: bool,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_output_tokens: Option<u64>,
    pub tools: Vec<Value>,
    pub tool_choice: Option<Value>,
    pub parallel_tool_calls: Option<bool>,
    pub reasoning: Reasoning,
    pub truncation: Truncation,
    pub previous_response_id: Option<String>,
    pub metadata: Map<String, Value>,
    pub text: Text,
    pub seed: Option<i64>,
    pub stop: Option<Value>,
    pub top_k: Option<u64>,
    pub repetition_penalty: Option<f64>,
    pub user: Option<String>,
    pub prompt_cache_key: Option<String>,
}

impl CreateRequest {
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

fn valid_function_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_tools(tools: &[Value]) -> ApiResult<()> {
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
    Ok(())
}

fn check_tool_choice(choice: Option<&Value>, tools: &[Value]) -> ApiResult<()> {
    let Some(choice) = choice else {
        return Ok(());
    };
    match choice {
        Value::String(s) if s == "none" || s == "auto" => Ok(()),
        Value::String(s) if s == "required" => {
            if tools.is_empty() {
                return Err(ApiError::invalid(
                    "tool_choice",
                    "tool_choice 'required' needs at least one tool in tools.",
                ));
            }
            Ok(())
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
            Ok(())
        }
        _ => Err(ApiError::invalid(
            "tool_choice",
            "tool_choice must be none, auto, required or {\"type\": \"function\", \"name\": ...}.",
        )),
    }
}

fn check_metadata(metadata: &Map<String, Value>) -> ApiResult<()> {
    if metadata.len() > METADATA_MAX_PAIRS {
        return Err(ApiError::invalid(
            "metadata",
            format!("metadata holds at most {METADATA_MAX_PAIRS} pairs."),
        ));
    }
    for (k, v) in metadata {
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
    Ok(())
}

fn check_text_format(format: &Map<String, Value>) -> ApiResult<()> {
    match format.get("type").and_then(Value::as_str) {
        Some("text") | Some("json_object") => Ok(()),
        Some("json_schema") => {
            let name = format
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !valid_function_name(name) {
                return Err(ApiError::invalid(
                    "text.format.name",
                    "A json_schema format needs a name of 1 to 64 letters, digits, '_' or '-'.",
                ));
            }
            if !format.get("schema").is_some_and(Value::is_object) {
                return Err(ApiError::invalid(
                    "text.format.schema",
                    "A json_schema format needs a schema object.",
                ));
            }
            Ok(())
        }
        _ => Err(ApiError::invalid(
            "text.format.type",
            "text.format.type must be text, json_object or json_schema.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The body read as the API reads it, from its bytes.
    fn parse(body: Value) -> ApiResult<CreateRequest> {
        let bytes = serde_json::to_vec(&body).expect("serializes");
        params::read_body::<ResponseCreateBody>(&bytes).map(CreateRequest::from)
    }

    fn err(body: Value) -> ApiError {
        parse(body).expect_err("should be refused")
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
        let r = parse(with(json!({
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
        let r = parse(with(json!({
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
        let r = parse(json!({"model": "m", "input": "hi"})).expect("valid");
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
