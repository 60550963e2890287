//! The typed model of a state machine, its validation, and the data-flow functions
//! (`InputPath` → `Parameters` → result → `ResultSelector` → `ResultPath` → `OutputPath`).

use crate::error::{names, DefinitionError, StatesError};
use crate::intrinsic::Intrinsic;
use crate::path::JsonPath;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A validated state machine.
#[derive(Debug, Clone)]
pub struct StateMachine {
    name: String,
    version: String,
    comment: Option<String>,
    start_at: String,
    timeout_seconds: Option<u64>,
    states: BTreeMap<String, State>,
}

/// One state.
#[derive(Debug, Clone)]
pub struct State {
    /// The state's name.
    pub name: String,
    /// `InputPath` (`$` when absent).
    pub input_path: PathField,
    /// `OutputPath` (`$` when absent).
    pub output_path: PathField,
    /// What the state does.
    pub kind: StateKind,
}

/// `InputPath`, `OutputPath` or `ResultPath`: absent (the default), `null`, or a path.
#[derive(Debug, Clone, PartialEq)]
pub enum PathField {
    /// Field absent: `$`.
    Default,
    /// Explicit `null`.
    Null,
    /// A path.
    Path(JsonPath),
}

/// `Next` or `End: true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// Continue with this state.
    Next(String),
    /// The execution succeeds with this state's output.
    End,
}

/// The type-specific part of a state.
#[derive(Debug, Clone)]
pub enum StateKind {
    /// `Pass`.
    Pass {
        /// `Parameters`.
        parameters: Option<Template>,
        /// `Result`.
        result: Option<Value>,
        /// `ResultPath`.
        result_path: PathField,
        /// `Next`/`End`.
        transition: Transition,
    },
    /// `Task`.
    Task(Box<TaskState>),
    /// `Choice`.
    Choice {
        /// `Choices`, in order.
        choices: Vec<Choice>,
        /// `Default`.
        default: Option<String>,
    },
    /// `Wait`.
    Wait {
        /// `Seconds` or `SecondsPath`.
        wait: WaitFor,
        /// `Next`/`End`.
        transition: Transition,
    },
    /// `Succeed`.
    Succeed,
    /// `Fail`.
    Fail {
        /// `Error` or `ErrorPath`.
        error: Option<Source>,
        /// `Cause` or `CausePath`.
        cause: Option<Source>,
    },
}

/// A `Task` state.
#[derive(Debug, Clone)]
pub struct TaskState {
    /// `Resource`, after substitution.
    pub resource: String,
    /// `Parameters`.
    pub parameters: Option<Template>,
    /// `ResultSelector`.
    pub result_selector: Option<Template>,
    /// `ResultPath`.
    pub result_path: PathField,
    /// `Retry`, in order.
    pub retry: Vec<Retrier>,
    /// `Catch`, in order.
    pub catch: Vec<Catcher>,
    /// `TimeoutSeconds` (none: no task timeout).
    pub timeout_seconds: Option<u64>,
    /// `HeartbeatSeconds`.
    pub heartbeat_seconds: Option<u64>,
    /// `Next`/`End`.
    pub transition: Transition,
}

impl TaskState {
    /// Whether the resource uses the callback pattern (`….waitForTaskToken`).
    pub fn waits_for_task_token(&self) -> bool {
        self.resource.ends_with(".waitForTaskToken")
    }
}

/// The resource of Step Functions' optimised Lambda integration.
pub const LAMBDA_INVOKE: &str = "arn:aws:states:::lambda:invoke";

/// One `Retry` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrier {
    /// `ErrorEquals`.
    pub error_equals: Vec<String>,
    /// `IntervalSeconds` (default 1).
    pub interval_seconds: u64,
    /// `MaxAttempts` (default 3; 0 = never retry).
    pub max_attempts: u32,
    /// `BackoffRate` (default 2.0).
    pub backoff_rate: f64,
    /// `MaxDelaySeconds` (cap on one delay).
    pub max_delay_seconds: Option<u64>,
}

impl Retrier {
    /// The delay before retry number `retry` (0-based) of this retrier, in seconds.
    pub fn delay_seconds(&self, retry: u32) -> f64 {
        let exponent = i32::try_from(retry).unwrap_or(i32::MAX);
        let delay = self.interval_seconds as f64 * self.backoff_rate.powi(exponent);
        match self.max_delay_seconds {
            Some(cap) => delay.min(cap as f64),
            None => delay,
        }
    }
}

/// One `Catch` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Catcher {
    /// `ErrorEquals`.
    pub error_equals: Vec<String>,
    /// `ResultPath` for the error output.
    pub result_path: PathField,
    /// `Next`.
    pub next: String,
}

/// Whether an `ErrorEquals` list matches an error name.
pub fn error_matches(error_equals: &[String], error: &str) -> bool {
    if error == names::RUNTIME || error == names::DATA_LIMIT_EXCEEDED {
        return false;
    }
    error_equals.iter().any(|name| {
        name == error
            || name == names::ALL
            || (name == names::TASK_FAILED && error != names::TIMEOUT)
    })
}

/// `Seconds` or `SecondsPath` of a `Wait` state.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitFor {
    /// A fixed number of seconds.
    Seconds(u64),
    /// A path to a non-negative integer in the effective input.
    SecondsPath(JsonPath),
}

/// A string source of a `Fail` state: literal, path or intrinsic.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// `Error` / `Cause`.
    Literal(String),
    /// `ErrorPath` / `CausePath` with a path.
    Path(JsonPath),
    /// `ErrorPath` / `CausePath` with an intrinsic function.
    Call(Intrinsic),
}

/// A payload template (`Parameters`, `ResultSelector`).
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    /// Copied as is.
    Literal(Value),
    /// An object whose fields are templates (keys without their `.$`).
    Object(Vec<(String, Template)>),
    /// A `.$` field with a path.
    Path {
        /// The key as written, with `.$`.
        key: String,
        /// The path.
        path: JsonPath,
    },
    /// A `.$` field with an intrinsic function.
    Call(Intrinsic),
}

impl Template {
    fn parse(value: &Value) -> Result<Self, String> {
        match value {
            Value::Object(map) => {
                let mut fields = Vec::with_capacity(map.len());
                for (key, v) in map {
                    if let Some(stripped) = key.strip_suffix(".$") {
                        let Value::String(text) = v else {
                            return Err(format!("field {key:?} must be a string path"));
                        };
                        let template = if Intrinsic::looks_like_call(text) {
                            Template::Call(
                                Intrinsic::parse(text)
                                    .map_err(|e| format!("field {key:?}: {e}"))?,
                            )
                        } else {
                            Template::Path {
                                key: key.clone(),
                                path: JsonPath::parse(text)
                                    .map_err(|e| format!("field {key:?}: {e}"))?,
                            }
                        };
                        fields.push((stripped.to_string(), template));
                    } else {
                        fields.push((key.clone(), Template::parse(v)?));
                    }
                }
                Ok(Template::Object(fields))
            }
            other => Ok(Template::Literal(other.clone())),
        }
    }

    /// Builds the payload from the effective input and the context object.
    pub fn eval(&self, input: &Value, context: &Value) -> Result<Value, StatesError> {
        match self {
            Template::Literal(v) => Ok(v.clone()),
            Template::Object(fields) => {
                let mut out = Map::new();
                for (key, template) in fields {
                    out.insert(key.clone(), template.eval(input, context)?);
                }
                Ok(Value::Object(out))
            }
            Template::Path { key, path } => path.get(input, context).cloned().ok_or_else(|| {
                StatesError::runtime(format!(
                    "The JSONPath '{path}' specified for the field '{key}' could not be found \
                     in the input '{input}'"
                ))
            }),
            Template::Call(call) => call.eval(input, context),
        }
    }
}

/// A top-level Choice rule with its `Next`.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The condition.
    pub rule: ChoiceRule,
    /// Where to go when it holds.
    pub next: String,
}

/// A Choice condition.
#[derive(Debug, Clone, PartialEq)]
pub enum ChoiceRule {
    /// `And`.
    And(Vec<ChoiceRule>),
    /// `Or`.
    Or(Vec<ChoiceRule>),
    /// `Not`.
    Not(Box<ChoiceRule>),
    /// `Variable` with one comparison operator.
    Compare {
        /// `Variable`.
        variable: JsonPath,
        /// The operator and its operand.
        test: Test,
    },
}

/// The type a comparison operator works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `String…`
    String,
    /// `Numeric…`
    Numeric,
    /// `Boolean…`
    Boolean,
}

/// The relation of a comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// `…Equals`
    Equals,
    /// `…LessThan`
    LessThan,
    /// `…GreaterThan`
    GreaterThan,
    /// `…LessThanEquals`
    LessThanEquals,
    /// `…GreaterThanEquals`
    GreaterThanEquals,
}

/// A comparison operator with its operand.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// e.g. `NumericLessThan: 3` or `StringEqualsPath: "$.other"`.
    Compare {
        /// Operand type.
        kind: Kind,
        /// Relation.
        relation: Relation,
        /// A literal or (for `…Path` operators) a path.
        operand: Operand,
    },
    /// `IsPresent`.
    IsPresent(bool),
    /// `IsNull`.
    IsNull(bool),
    /// `IsString`.
    IsString(bool),
    /// `IsNumeric`.
    IsNumeric(bool),
    /// `IsBoolean`.
    IsBoolean(bool),
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A literal of the operator's type.
    Value(Value),
    /// A path (operators ending in `Path`).
    Path(JsonPath),
}

impl ChoiceRule {
    /// Evaluates the rule. A comparison whose `Variable` (or operand path) is absent is a
    /// `States.Runtime` error, as in Step Functions; guard with `IsPresent`.
    pub fn eval(&self, input: &Value, context: &Value) -> Result<bool, StatesError> {
        match self {
            ChoiceRule::And(rules) => {
                for rule in rules {
                    if !rule.eval(input, context)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            ChoiceRule::Or(rules) => {
                for rule in rules {
                    if rule.eval(input, context)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            ChoiceRule::Not(rule) => Ok(!rule.eval(input, context)?),
            ChoiceRule::Compare { variable, test } => {
                let value = variable.get(input, context);
                if let Test::IsPresent(expected) = test {
                    return Ok(value.is_some() == *expected);
                }
                let value = value.ok_or_else(|| {
                    StatesError::runtime(format!(
                        "Invalid path '{variable}': The choice state's condition path references \
                         an invalid value."
                    ))
                })?;
                Ok(match test {
                    Test::IsPresent(_) => true,
                    Test::IsNull(expected) => value.is_null() == *expected,
                    Test::IsString(expected) => value.is_string() == *expected,
                    Test::IsNumeric(expected) => value.is_number() == *expected,
                    Test::IsBoolean(expected) => value.is_boolean() == *expected,
                    Test::Compare {
                        kind,
                        relation,
                        operand,
                    } => {
                        let other = match operand {
                            Operand::Value(v) => v,
                            Operand::Path(p) => p.get(input, context).ok_or_else(|| {
                                StatesError::runtime(format!(
                                    "Invalid path '{p}': The choice state's condition path \
                                     references an invalid value."
                                ))
                            })?,
                        };
                        compare(*kind, *relation, value, other)
                    }
                })
            }
        }
    }
}

fn compare(kind: Kind, relation: Relation, left: &Value, right: &Value) -> bool {
    use std::cmp::Ordering;
    let ordering: Option<Ordering> = match (kind, left, right) {
        (Kind::String, Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Kind::Numeric, Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) => a.partial_cmp(&b),
            _ => None,
        },
        (Kind::Boolean, Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    };
    let Some(ordering) = ordering else {
        return false;
    };
    match relation {
        Relation::Equals => ordering == Ordering::Equal,
        Relation::LessThan => ordering == Ordering::Less,
        Relation::GreaterThan => ordering == Ordering::Greater,
        Relation::LessThanEquals => ordering != Ordering::Greater,
        Relation::GreaterThanEquals => ordering != Ordering::Less,
    }
}

// ---------------------------------------------------------------------------------------------
// Data flow

/// Applies `InputPath` or `OutputPath`: absent keeps the value, `null` gives `{}`, a path selects
/// (absent path: `States.Runtime`).
pub fn select(
    field: &PathField,
    which: &str,
    value: &Value,
    context: &Value,
) -> Result<Value, StatesError> {
    match field {
        PathField::Default => Ok(value.clone()),
        PathField::Null => Ok(Value::Object(Map::new())),
        PathField::Path(path) => path.get(value, context).cloned().ok_or_else(|| {
            StatesError::runtime(format!(
                "Invalid path '{path}' : No results for path: $['{which}'] in {value}"
            ))
        }),
    }
}

/// Applies `ResultPath`: absent replaces the input with the result, `null` discards the result,
/// a path places the result inside the state's (raw) input.
pub fn place_result(
    field: &PathField,
    raw_input: &Value,
    result: Value,
) -> Result<Value, StatesError> {
    match field {
        PathField::Default => Ok(result),
        PathField::Null => Ok(raw_input.clone()),
        PathField::Path(path) => path
            .set(raw_input.clone(), result)
            .map_err(|cause| StatesError::new(names::RESULT_PATH_MATCH_FAILURE, cause)),
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing and validation

const TOP_FIELDS: &[&str] = &["StartAt", "States", "Comment", "TimeoutSeconds", "Version"];
const COMMON: &[&str] = &["Type", "Comment"];
const IO: &[&str] = &["InputPath", "OutputPath"];
const NEXT_END: &[&str] = &["Next", "End"];

impl StateMachine {
    /// Substitutes `${Name}` placeholders from `substitutions`, then parses and validates.
    pub fn load(
        name: &str,
        definition_text: &str,
        substitutions: &BTreeMap<String, String>,
    ) -> Result<Self, DefinitionError> {
        let value = crate::substitute::substitute(definition_text, substitutions)?;
        Self::from_value(name, &value)
    }

    /// Parses and validates a definition that needs no substitution.
    pub fn from_json_str(name: &str, definition_text: &str) -> Result<Self, DefinitionError> {
        let value: Value = serde_json::from_str(definition_text)
            .map_err(|e| DefinitionError::Json(e.to_string()))?;
        Self::from_value(name, &value)
    }

    /// Parses and validates a definition already read as JSON.
    pub fn from_value(name: &str, definition: &Value) -> Result<Self, DefinitionError> {
        let top = definition
            .as_object()
            .ok_or_else(|| DefinitionError::top("the definition must be a JSON object"))?;
        for key in top.keys() {
            if !TOP_FIELDS.contains(&key.as_str()) {
                return Err(DefinitionError::top(format!(
                    "top-level field {key:?} is not part of the supported subset"
                )));
            }
        }
        if let Some(version) = top.get("Version") {
            if version != "1.0" {
                return Err(DefinitionError::top("Version must be \"1.0\""));
            }
        }
        let start_at = top
            .get("StartAt")
            .and_then(Value::as_str)
            .ok_or_else(|| DefinitionError::top("StartAt (a string) is required"))?
            .to_string();
        let comment = match top.get("Comment") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(DefinitionError::top("Comment must be a string")),
        };
        let timeout_seconds = match top.get("TimeoutSeconds") {
            None => None,
            Some(v) => Some(positive_int(v).ok_or_else(|| {
                DefinitionError::top("TimeoutSeconds must be a positive integer")
            })?),
        };
        let raw_states = top
            .get("States")
            .and_then(Value::as_object)
            .ok_or_else(|| DefinitionError::top("States (an object) is required"))?;
        if raw_states.is_empty() {
            return Err(DefinitionError::top("States must not be empty"));
        }
        let mut states = BTreeMap::new();
        for (state_name, raw) in raw_states {
            if state_name.is_empty() || state_name.chars().count() > 80 {
                return Err(DefinitionError::state(
                    state_name,
                    "state names must be 1 to 80 characters",
                ));
            }
            let state = parse_state(state_name, raw)
                .map_err(|message| DefinitionError::state(state_name, message))?;
            states.insert(state_name.clone(), state);
        }
        let machine = Self {
            name: name.to_string(),
            version: fingerprint(&definition.to_string()),
            comment,
            start_at,
            timeout_seconds,
            states,
        };
        machine.check_graph()?;
        Ok(machine)
    }

    fn check_graph(&self) -> Result<(), DefinitionError> {
        if !self.states.contains_key(&self.start_at) {
            return Err(DefinitionError::top(format!(
                "StartAt names {:?}, which is not a state",
                self.start_at
            )));
        }
        for state in self.states.values() {
            for target in targets(state) {
                if !self.states.contains_key(target) {
                    return Err(DefinitionError::state(
                        &state.name,
                        format!("transition to {target:?}, which is not a state"),
                    ));
                }
            }
        }
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::from([self.start_at.as_str()]);
        while let Some(name) = queue.pop_front() {
            if !seen.insert(name) {
                continue;
            }
            if let Some(state) = self.states.get(name) {
                queue.extend(targets(state));
            }
        }
        if let Some(unreachable) = self.states.keys().find(|n| !seen.contains(n.as_str())) {
            return Err(DefinitionError::state(
                unreachable,
                "state is not reachable from StartAt",
            ));
        }
        Ok(())
    }

    /// The name given when loading (used in the execution and state-machine ids).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A fingerprint of the definition after substitution (FNV-1a, hex).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `Comment`.
    pub fn comment(&self) -> Option<&str> {
        self.comment.as_deref()
    }

    /// `StartAt`.
    pub fn start_at(&self) -> &str {
        &self.start_at
    }

    /// Top-level `TimeoutSeconds`.
    pub fn timeout_seconds(&self) -> Option<u64> {
        self.timeout_seconds
    }

    /// A state by name.
    pub fn state(&self, name: &str) -> Option<&State> {
        self.states.get(name)
    }

    /// All states, by name.
    pub fn states(&self) -> impl Iterator<Item = &State> {
        self.states.values()
    }
}

fn targets(state: &State) -> Vec<&str> {
    fn next(t: &Transition) -> Option<&str> {
        match t {
            Transition::Next(n) => Some(n.as_str()),
            Transition::End => None,
        }
    }
    let mut out = Vec::new();
    match &state.kind {
        StateKind::Pass { transition, .. } | StateKind::Wait { transition, .. } => {
            out.extend(next(transition))
        }
        StateKind::Task(task) => {
            out.extend(next(&task.transition));
            out.extend(task.catch.iter().map(|c| c.next.as_str()));
        }
        StateKind::Choice { choices, default } => {
            out.extend(choices.iter().map(|c| c.next.as_str()));
            out.extend(default.as_deref());
        }
        StateKind::Succeed | StateKind::Fail { .. } => {}
    }
    out
}

fn fingerprint(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn positive_int(v: &Value) -> Option<u64> {
    v.as_u64().filter(|n| *n > 0)
}

fn check_fields(obj: &Map<String, Value>, kind: &str, groups: &[&[&str]]) -> Result<(), String> {
    for key in obj.keys() {
        if !groups.iter().any(|g| g.contains(&key.as_str())) {
            return Err(format!(
                "field {key:?} is not part of the supported subset for a {kind} state"
            ));
        }
    }
    Ok(())
}

fn path_field(obj: &Map<String, Value>, key: &str) -> Result<PathField, String> {
    match obj.get(key) {
        None => Ok(PathField::Default),
        Some(Value::Null) => Ok(PathField::Null),
        Some(Value::String(text)) => JsonPath::parse(text)
            .map(PathField::Path)
            .map_err(|e| format!("{key}: {e}")),
        Some(_) => Err(format!("{key} must be a path string or null")),
    }
}

fn result_path_field(obj: &Map<String, Value>, key: &str) -> Result<PathField, String> {
    let field = path_field(obj, key)?;
    if let PathField::Path(p) = &field {
        if p.root() == crate::path::Root::Context {
            return Err(format!("{key} cannot refer to the context object"));
        }
    }
    Ok(field)
}

fn transition(obj: &Map<String, Value>) -> Result<Transition, String> {
    match (obj.get("Next"), obj.get("End")) {
        (Some(Value::String(next)), None) => Ok(Transition::Next(next.clone())),
        (None, Some(Value::Bool(true))) => Ok(Transition::End),
        (Some(_), Some(_)) => Err("Next and End are mutually exclusive".into()),
        (Some(_), None) => Err("Next must be a state name".into()),
        (None, Some(_)) => Err("End must be true when present".into()),
        (None, None) => Err("one of Next or End is required".into()),
    }
}

fn template(obj: &Map<String, Value>, key: &str) -> Result<Option<Template>, String> {
    obj.get(key)
        .map(|v| Template::parse(v).map_err(|e| format!("{key}: {e}")))
        .transpose()
}

fn parse_state(name: &str, raw: &Value) -> Result<State, String> {
    let obj = raw.as_object().ok_or("a state must be a JSON object")?;
    let kind = obj
        .get("Type")
        .and_then(Value::as_str)
        .ok_or("Type (a string) is required")?;
    let kind = match kind {
        "Pass" => {
            check_fields(
                obj,
                kind,
                &[
                    COMMON,
                    IO,
                    NEXT_END,
                    &["Parameters", "Result", "ResultPath"],
                ],
            )?;
            StateKind::Pass {
                parameters: template(obj, "Parameters")?,
                result: obj.get("Result").cloned(),
                result_path: result_path_field(obj, "ResultPath")?,
                transition: transition(obj)?,
            }
        }
        "Task" => {
            check_fields(
                obj,
                kind,
                &[
                    COMMON,
                    IO,
                    NEXT_END,
                    &[
                        "Resource",
                        "Parameters",
                        "ResultSelector",
                        "ResultPath",
                        "Retry",
                        "Catch",
                        "TimeoutSeconds",
                        "HeartbeatSeconds",
                    ],
                ],
            )?;
            StateKind::Task(Box::new(parse_task(obj)?))
        }
        "Choice" => {
            check_fields(obj, kind, &[COMMON, IO, &["Choices", "Default"]])?;
            let raw_choices = obj
                .get("Choices")
                .and_then(Value::as_array)
                .filter(|c| !c.is_empty())
                .ok_or("Choices must be a non-empty array")?;
            let mut choices = Vec::with_capacity(raw_choices.len());
            for (i, raw) in raw_choices.iter().enumerate() {
                let rule_obj = raw
                    .as_object()
                    .ok_or_else(|| format!("Choices[{i}] must be an object"))?;
                let next = rule_obj
                    .get("Next")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("Choices[{i}] needs Next"))?
                    .to_string();
                let rule = parse_rule(rule_obj, true).map_err(|e| format!("Choices[{i}]: {e}"))?;
                choices.push(Choice { rule, next });
            }
            let default = match obj.get("Default") {
                None => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err("Default must be a state name".into()),
            };
            StateKind::Choice { choices, default }
        }
        "Wait" => {
            check_fields(
                obj,
                kind,
                &[COMMON, IO, NEXT_END, &["Seconds", "SecondsPath"]],
            )?;
            let wait = match (obj.get("Seconds"), obj.get("SecondsPath")) {
                (Some(s), None) => {
                    WaitFor::Seconds(s.as_u64().ok_or("Seconds must be a non-negative integer")?)
                }
                (None, Some(Value::String(p))) => WaitFor::SecondsPath(
                    JsonPath::parse(p).map_err(|e| format!("SecondsPath: {e}"))?,
                ),
                _ => return Err("exactly one of Seconds or SecondsPath is required".into()),
            };
            StateKind::Wait {
                wait,
                transition: transition(obj)?,
            }
        }
        "Succeed" => {
            check_fields(obj, kind, &[COMMON, IO])?;
            StateKind::Succeed
        }
        "Fail" => {
            check_fields(
                obj,
                kind,
                &[COMMON, &["Error", "Cause", "ErrorPath", "CausePath"]],
            )?;
            StateKind::Fail {
                error: fail_source(obj, "Error", "ErrorPath")?,
                cause: fail_source(obj, "Cause", "CausePath")?,
            }
        }
        other => {
            return Err(format!(
                "state type {other:?} is not part of the supported subset"
            ))
        }
    };
    let (input_path, output_path) = if matches!(kind, StateKind::Fail { .. }) {
        (PathField::Default, PathField::Default)
    } else {
        (
            path_field(obj, "InputPath")?,
            path_field(obj, "OutputPath")?,
        )
    };
    Ok(State {
        name: name.to_string(),
        input_path,
        output_path,
        kind,
    })
}

fn fail_source(
    obj: &Map<String, Value>,
    literal: &str,
    path: &str,
) -> Result<Option<Source>, String> {
    match (obj.get(literal), obj.get(path)) {
        (Some(_), Some(_)) => Err(format!("{literal} and {path} are mutually exclusive")),
        (Some(Value::String(s)), None) => Ok(Some(Source::Literal(s.clone()))),
        (Some(_), None) => Err(format!("{literal} must be a string")),
        (None, Some(Value::String(s))) => {
            if Intrinsic::looks_like_call(s) {
                Intrinsic::parse(s)
                    .map(|c| Some(Source::Call(c)))
                    .map_err(|e| format!("{path}: {e}"))
            } else {
                JsonPath::parse(s)
                    .map(|p| Some(Source::Path(p)))
                    .map_err(|e| format!("{path}: {e}"))
            }
        }
        (None, Some(_)) => Err(format!("{path} must be a string")),
        (None, None) => Ok(None),
    }
}

fn parse_task(obj: &Map<String, Value>) -> Result<TaskState, String> {
    let resource = obj
        .get("Resource")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .ok_or("Resource (a string) is required")?
        .to_string();
    let timeout_seconds = obj
        .get("TimeoutSeconds")
        .map(|v| positive_int(v).ok_or("TimeoutSeconds must be a positive integer"))
        .transpose()?;
    let heartbeat_seconds = obj
        .get("HeartbeatSeconds")
        .map(|v| positive_int(v).ok_or("HeartbeatSeconds must be a positive integer"))
        .transpose()?;
    if let (Some(t), Some(h)) = (timeout_seconds, heartbeat_seconds) {
        if h >= t {
            return Err("HeartbeatSeconds must be smaller than TimeoutSeconds".into());
        }
    }
    let retry = match obj.get("Retry") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, r)| parse_retrier(r).map_err(|e| format!("Retry[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("Retry must be an array".into()),
    };
    check_all_last(retry.iter().map(|r| &r.error_equals), "Retry")?;
    let catch = match obj.get("Catch") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, c)| parse_catcher(c).map_err(|e| format!("Catch[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("Catch must be an array".into()),
    };
    check_all_last(catch.iter().map(|c| &c.error_equals), "Catch")?;
    Ok(TaskState {
        resource,
        parameters: template(obj, "Parameters")?,
        result_selector: template(obj, "ResultSelector")?,
        result_path: result_path_field(obj, "ResultPath")?,
        retry,
        catch,
        timeout_seconds,
        heartbeat_seconds,
        transition: transition(obj)?,
    })
}

fn check_all_last<'a>(
    lists: impl ExactSizeIterator<Item = &'a Vec<String>>,
    field: &str,
) -> Result<(), String> {
    let count = lists.len();
    for (i, list) in lists.enumerate() {
        if list.iter().any(|e| e == names::ALL) && (list.len() != 1 || i + 1 != count) {
            return Err(format!(
                "{field}[{i}]: States.ALL must appear alone, in the last entry"
            ));
        }
    }
    Ok(())
}

fn error_equals(obj: &Map<String, Value>) -> Result<Vec<String>, String> {
    let list = obj
        .get("ErrorEquals")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or("ErrorEquals must be a non-empty array of strings")?;
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| "ErrorEquals must contain strings".to_string())
        })
        .collect()
}

fn parse_retrier(raw: &Value) -> Result<Retrier, String> {
    let obj = raw.as_object().ok_or("must be an object")?;
    for key in obj.keys() {
        if !matches!(
            key.as_str(),
            "ErrorEquals" | "IntervalSeconds" | "MaxAttempts" | "BackoffRate" | "MaxDelaySeconds"
        ) {
            return Err(format!("field {key:?} is not part of the supported subset"));
        }
    }
    let interval_seconds = match obj.get("IntervalSeconds") {
        None => 1,
        Some(v) => positive_int(v).ok_or("IntervalSeconds must be a positive integer")?,
    };
    let max_attempts = match obj.get("MaxAttempts") {
        None => 3,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or("MaxAttempts must be a non-negative integer")?,
    };
    let backoff_rate = match obj.get("BackoffRate") {
        None => 2.0,
        Some(v) => v
            .as_f64()
            .filter(|r| *r >= 1.0)
            .ok_or("BackoffRate must be a number >= 1.0")?,
    };
    let max_delay_seconds = obj
        .get("MaxDelaySeconds")
        .map(|v| positive_int(v).ok_or("MaxDelaySeconds must be a positive integer"))
        .transpose()?;
    Ok(Retrier {
        error_equals: error_equals(obj)?,
        interval_seconds,
        max_attempts,
        backoff_rate,
        max_delay_seconds,
    })
}

fn parse_catcher(raw: &Value) -> Result<Catcher, String> {
    let obj = raw.as_object().ok_or("must be an object")?;
    for key in obj.keys() {
        if !matches!(key.as_str(), "ErrorEquals" | "ResultPath" | "Next") {
            return Err(format!("field {key:?} is not part of the supported subset"));
        }
    }
    Ok(Catcher {
        error_equals: error_equals(obj)?,
        result_path: result_path_field(obj, "ResultPath")?,
        next: obj
            .get("Next")
            .and_then(Value::as_str)
            .ok_or("Next (a state name) is required")?
            .to_string(),
    })
}

fn parse_rule(obj: &Map<String, Value>, top: bool) -> Result<ChoiceRule, String> {
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    if top {
        keys.retain(|k| *k != "Next");
    } else if obj.contains_key("Next") {
        return Err("Next is only allowed on top-level rules".into());
    }
    keys.retain(|k| *k != "Comment");
    let nested = |v: &Value| -> Result<ChoiceRule, String> {
        let o = v.as_object().ok_or("nested rules must be objects")?;
        parse_rule(o, false)
    };
    for combinator in ["And", "Or", "Not"] {
        if let Some(v) = obj.get(combinator) {
            if keys.len() != 1 {
                return Err(format!(
                    "{combinator} must be the only operator of its rule"
                ));
            }
            return match combinator {
                "Not" => Ok(ChoiceRule::Not(Box::new(nested(v)?))),
                _ => {
                    let list = v
                        .as_array()
                        .filter(|l| !l.is_empty())
                        .ok_or_else(|| format!("{combinator} must be a non-empty array"))?;
                    let rules = list.iter().map(nested).collect::<Result<Vec<_>, _>>()?;
                    Ok(if combinator == "And" {
                        ChoiceRule::And(rules)
                    } else {
                        ChoiceRule::Or(rules)
                    })
                }
            };
        }
    }
    let variable = obj
        .get("Variable")
        .and_then(Value::as_str)
        .ok_or("Variable (a path) is required")?;
    let variable = JsonPath::parse(variable).map_err(|e| format!("Variable: {e}"))?;
    keys.retain(|k| *k != "Variable");
    let [operator] = keys.as_slice() else {
        return Err("a rule needs exactly one comparison operator".into());
    };
    let operand = &obj[*operator];
    let test = parse_test(operator, operand)?;
    Ok(ChoiceRule::Compare { variable, test })
}

fn parse_test(operator: &str, operand: &Value) -> Result<Test, String> {
    let type_test = |ctor: fn(bool) -> Test| {
        operand
            .as_bool()
            .map(ctor)
            .ok_or_else(|| format!("{operator} needs true or false"))
    };
    match operator {
        "IsPresent" => return type_test(Test::IsPresent),
        "IsNull" => return type_test(Test::IsNull),
        "IsString" => return type_test(Test::IsString),
        "IsNumeric" => return type_test(Test::IsNumeric),
        "IsBoolean" => return type_test(Test::IsBoolean),
        _ => {}
    }
    let (base, is_path) = match operator.strip_suffix("Path") {
        Some(base) => (base, true),
        None => (operator, false),
    };
    let (kind, relation) = if let Some(r) = base.strip_prefix("String") {
        (Kind::String, r)
    } else if let Some(r) = base.strip_prefix("Numeric") {
        (Kind::Numeric, r)
    } else if let Some(r) = base.strip_prefix("Boolean") {
        (Kind::Boolean, r)
    } else {
        return Err(format!(
            "operator {operator:?} is not part of the supported subset"
        ));
    };
    let relation = match (kind, relation) {
        (_, "Equals") => Relation::Equals,
        (Kind::String | Kind::Numeric, "LessThan") => Relation::LessThan,
        (Kind::String | Kind::Numeric, "GreaterThan") => Relation::GreaterThan,
        (Kind::String | Kind::Numeric, "LessThanEquals") => Relation::LessThanEquals,
        (Kind::String | Kind::Numeric, "GreaterThanEquals") => Relation::GreaterThanEquals,
        _ => {
            return Err(format!(
                "operator {operator:?} is not part of the supported subset"
            ))
        }
    };
    let operand = if is_path {
        let text = operand
            .as_str()
            .ok_or_else(|| format!("{operator} needs a path"))?;
        Operand::Path(JsonPath::parse(text).map_err(|e| format!("{operator}: {e}"))?)
    } else {
        let ok = match kind {
            Kind::String => operand.is_string(),
            Kind::Numeric => operand.is_number(),
            Kind::Boolean => operand.is_boolean(),
        };
        if !ok {
            let wanted = match kind {
                Kind::String => "string",
                Kind::Numeric => "number",
                Kind::Boolean => "boolean",
            };
            return Err(format!("{operator} needs a {wanted} operand"));
        }
        Operand::Value(operand.clone())
    };
    Ok(Test::Compare {
        kind,
        relation,
        operand,
    })
}
