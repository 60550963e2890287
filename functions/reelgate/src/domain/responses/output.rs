//! The bridge back: a `chat.completion` (or a stream of `chat.completion.chunk`s) becomes a
//! Response object (or OpenAI's typed response events).

use super::request::{CreateRequest, Reasoning, Text, Truncation};
use crate::domain::billing::token_charges::{ReportedUsage, TokenUsage};
use crate::domain::ids::new_id;
use crate::ports::upstream::completion::{CompletionChoice, ToolCallDelta};
use crate::ports::upstream::{Completion, CompletionChunk};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

/// A `response` object: what `POST /v1/responses` answers (and its stream's events carry), and
/// what is stored for `GET /v1/responses/{id}`. It echoes the request's settings.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResponseObject {
    #[schema(pattern = "^resp_")]
    pub id: String,
    #[schema(value_type = String, pattern = "^response$")]
    pub object: &'static str,
    pub created_at: i64,
    /// `in_progress`, `completed`, `incomplete` or `failed`.
    #[schema(value_type = String)]
    pub status: &'static str,
    pub background: bool,
    /// Why a `failed` response failed.
    #[schema(required = true)]
    pub error: Option<ResponseError>,
    /// Why an `incomplete` response stopped.
    #[schema(required = true)]
    pub incomplete_details: Option<IncompleteDetails>,
    #[schema(required = true)]
    pub instructions: Option<String>,
    #[schema(required = true)]
    pub max_output_tokens: Option<u64>,
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    pub model: String,
    /// `message`, `function_call` and `reasoning` items.
    #[schema(value_type = Vec<Object>)]
    pub output: Vec<OutputItem>,
    pub parallel_tool_calls: bool,
    #[schema(required = true)]
    pub previous_response_id: Option<String>,
    pub reasoning: Reasoning,
    pub store: bool,
    pub temperature: f64,
    pub text: Text,
    #[schema(schema_with = crate::ports::upstream::request::tool_choice_schema)]
    pub tool_choice: Value,
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<Value>,
    pub top_p: f64,
    pub truncation: Truncation,
    /// Null while in progress.
    #[schema(required = true)]
    pub usage: Option<ResponseUsage>,
    #[schema(required = true)]
    pub user: Option<String>,
}

/// A response's `usage`: the upstream's count, or the estimate when it reported none.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct ResponseUsage {
    pub input_tokens: u64,
    pub input_tokens_details: InputTokensDetails,
    pub output_tokens: u64,
    pub output_tokens_details: OutputTokensDetails,
    pub total_tokens: u64,
    /// What the response's charge took from the balance, an exact decimal in the model's
    /// currency; absent when nothing was charged (a failed response) or the charge could not be
    /// written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct InputTokensDetails {
    /// Of the input tokens, those read from the upstream's prompt cache.
    pub cached_tokens: u64,
    /// Of the input tokens, those written to the upstream's prompt cache: reelgate's addition to
    /// OpenAI's shape, present only where there were any.
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ResponseUsage {
    /// The usage of `tokens` (the upstream's count, or the estimate), with the reasoning
    /// tokens and the total where the upstream reported them.
    pub fn of(tokens: TokenUsage, reasoning_tokens: u64, total: Option<u64>) -> ResponseUsage {
        ResponseUsage {
            input_tokens: tokens.prompt_tokens,
            input_tokens_details: InputTokensDetails {
                cached_tokens: tokens.cached_tokens,
                cache_write_tokens: tokens.cache_write_tokens,
            },
            output_tokens: tokens.completion_tokens,
            output_tokens_details: OutputTokensDetails { reasoning_tokens },
            total_tokens: total.unwrap_or(tokens.prompt_tokens + tokens.completion_tokens),
            cost: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ResponseError {
    pub code: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    #[schema(value_type = String)]
    pub reason: &'static str,
}

/// What a response echoes of its request, fixed when it is created.
#[derive(Clone, Debug)]
pub struct Draft {
    pub id: String,
    pub created_at: i64,
    /// The catalog's model id (not the upstream's name for it).
    pub model: String,
    pub req: CreateRequest,
}

/// How a response ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Completed,
    /// `incomplete_details.reason`: `max_output_tokens` or `content_filter`.
    Incomplete(&'static str),
    Failed {
        code: String,
        message: String,
    },
}

impl Outcome {
    /// From the upstream's `finish_reason`.
    pub fn from_finish(reason: Option<&str>) -> Outcome {
        match reason {
            Some("length") => Outcome::Incomplete("max_output_tokens"),
            Some("content_filter") => Outcome::Incomplete("content_filter"),
            _ => Outcome::Completed,
        }
    }
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Incomplete(_) => "incomplete",
            Outcome::Failed { .. } => "failed",
        }
    }
    /// The status of the output items under this outcome.
    fn item_status(&self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            _ => "incomplete",
        }
    }
}

impl Draft {
    pub fn new(model: &str, req: CreateRequest) -> Self {
        Draft {
            id: new_id("resp"),
            created_at: crate::ports::store::now_secs(),
            model: model.to_owned(),
            req,
        }
    }

    /// The Response object. `outcome` None is a response still in progress.
    pub fn object(
        &self,
        outcome: Option<&Outcome>,
        output: &[OutputItem],
        usage: Option<&ResponseUsage>,
    ) -> ResponseObject {
        let r = &self.req;
        let (status, error, incomplete_details) = match outcome {
            None => ("in_progress", None, None),
            Some(o @ Outcome::Completed) => (o.status(), None, None),
            Some(o @ Outcome::Incomplete(reason)) => {
                (o.status(), None, Some(IncompleteDetails { reason }))
            }
            Some(o @ Outcome::Failed { code, message }) => (
                o.status(),
                Some(ResponseError {
                    code: code.clone(),
                    message: message.clone(),
                }),
                None,
            ),
        };
        ResponseObject {
            id: self.id.clone(),
            object: "response",
            created_at: self.created_at,
            status,
            background: false,
            error,
            incomplete_details,
            instructions: r.instructions.clone(),
            max_output_tokens: r.max_output_tokens,
            metadata: r.metadata.clone(),
            model: self.model.clone(),
            output: output.to_vec(),
            parallel_tool_calls: r.parallel_tool_calls.unwrap_or(true),
            previous_response_id: r.previous_response_id.clone(),
            reasoning: r.reasoning.clone(),
            store: r.store,
            temperature: r.temperature.unwrap_or(1.0),
            text: r.text.clone(),
            tool_choice: r.tool_choice.clone().unwrap_or_else(|| "auto".into()),
            tools: r.tools.clone(),
            top_p: r.top_p.unwrap_or(1.0),
            truncation: r.truncation,
            usage: usage.cloned(),
            user: r.user.clone(),
        }
    }
}

/// The output tokens of an estimate: a quarter token per output character (the same rule as
/// truncation), for a response whose upstream reported no usage.
pub fn estimated_output_tokens(output: &[OutputItem]) -> u64 {
    let chars: usize = output
        .iter()
        .map(|item| match item {
            OutputItem::Message { content, .. } => content.iter().map(|p| p.text.len()).sum(),
            OutputItem::FunctionCall { arguments, .. } => arguments.len(),
        })
        .sum();
    (chars as u64).div_ceil(4)
}

/// The `usage` a completion or a chunk reported, when it is an object.
fn reported_usage(usage: Option<&Value>) -> Option<ReportedUsage> {
    usage
        .filter(|u| u.is_object())
        .and_then(|u| ReportedUsage::deserialize(u).ok())
}

/// An item of a response's `output`: the assistant's text, or a function call it asks for.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    Message {
        id: String,
        /// `in_progress`, `completed` or `incomplete`.
        status: &'static str,
        role: &'static str,
        content: Vec<OutputText>,
    },
    FunctionCall {
        id: String,
        status: &'static str,
        call_id: String,
        name: String,
        /// The arguments, a JSON text as the model wrote it.
        arguments: String,
    },
}

impl OutputItem {
    pub fn id(&self) -> &str {
        match self {
            OutputItem::Message { id, .. } | OutputItem::FunctionCall { id, .. } => id,
        }
    }
}

/// A message item's text part.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutputText {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
    pub annotations: Vec<Value>,
}

fn message_item(id: &str, text: &str, status: &'static str) -> OutputItem {
    OutputItem::Message {
        id: id.to_owned(),
        status,
        role: "assistant",
        content: vec![OutputText {
            kind: "output_text",
            text: text.to_owned(),
            annotations: Vec::new(),
        }],
    }
}

fn call_item(
    id: &str,
    call_id: &str,
    name: &str,
    arguments: &str,
    status: &'static str,
) -> OutputItem {
    OutputItem::FunctionCall {
        id: id.to_owned(),
        status,
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

/// A non-streamed completion → (outcome, output items, the usage if reported).
pub fn from_completion(
    completion: &Completion,
) -> (Outcome, Vec<OutputItem>, Option<ReportedUsage>) {
    let none = CompletionChoice::default();
    let choice = completion.choices.first().unwrap_or(&none);
    let outcome = Outcome::from_finish(choice.finish_reason.as_deref());
    let message = &choice.message;
    let calls = message.tool_calls.as_deref().unwrap_or_default();
    let text = message.content.as_deref();
    let mut output = Vec::new();
    // A message item when there is text, or when there is nothing else to show.
    if text.is_some_and(|t| !t.is_empty()) || calls.is_empty() {
        output.push(message_item(
            &new_id("msg"),
            text.unwrap_or_default(),
            outcome.item_status(),
        ));
    }
    for call in calls {
        let call_id = call.id.clone().unwrap_or_else(|| new_id("call"));
        let arguments = match call.function.arguments.as_str() {
            "" => "{}",
            written => written,
        };
        output.push(call_item(
            &new_id("fc"),
            &call_id,
            &call.function.name,
            arguments,
            outcome.item_status(),
        ));
    }
    (outcome, output, reported_usage(completion.usage.as_ref()))
}

/// One server-sent event: its `type` and its JSON.
pub type Event = (String, Value);

enum Open {
    Text {
        output_index: usize,
        item_id: String,
        text: String,
    },
    Call {
        tool_index: u64,
        output_index: usize,
        item_id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

/// Turns chat chunks into typed response events, numbering them. One instance per stream.
pub struct StreamState {
    seq: u64,
    /// Items so far; the open one is kept in `open` and written here when it closes.
    pub output: Vec<OutputItem>,
    open: Option<Open>,
    pub finish_reason: Option<String>,
    /// The upstream's usage, when a chunk carried it.
    pub usage: Option<ReportedUsage>,
}

impl Default for StreamState {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamState {
    pub fn new() -> Self {
        StreamState {
            seq: 0,
            output: Vec::new(),
            open: None,
            finish_reason: None,
            usage: None,
        }
    }

    fn event(&mut self, kind: &str, fields: Value) -> Event {
        let mut body = Map::new();
        body.insert("type".into(), kind.into());
        body.insert("sequence_number".into(), self.seq.into());
        if let Value::Object(f) = fields {
            body.extend(f);
        }
        self.seq += 1;
        (kind.to_owned(), Value::Object(body))
    }

    /// `response.created` and `response.in_progress`.
    pub fn start(&mut self, draft: &Draft) -> Vec<Event> {
        let response = draft.object(None, &[], None);
        vec![
            self.event("response.created", json!({"response": response})),
            self.event("response.in_progress", json!({"response": response})),
        ]
    }

    /// The events one chunk produces.
    pub fn on_chunk(&mut self, chunk: &CompletionChunk) -> Vec<Event> {
        let mut events = Vec::new();
        if let Some(u) = reported_usage(chunk.usage.as_ref()) {
            self.usage = Some(u);
        }
        let Some(choice) = chunk.choices.first() else {
            return events;
        };
        let delta = &choice.delta;
        if let Some(text) = delta.content.as_deref().filter(|t| !t.is_empty()) {
            if !matches!(self.open, Some(Open::Text { .. })) {
                self.close("completed", &mut events);
                self.open_text(&mut events);
            }
            if let Some(Open::Text {
                output_index,
                item_id,
                text: all,
            }) = &mut self.open
            {
                all.push_str(text);
                let fields = json!({
                    "item_id": item_id, "output_index": output_index, "content_index": 0,
                    "delta": text, "logprobs": [],
                });
                events.push(self.event("response.output_text.delta", fields));
            }
        }
        for call in delta.tool_calls.iter().flatten() {
            self.on_tool_delta(call, &mut events);
        }
        if let Some(reason) = &choice.finish_reason {
            self.finish_reason = Some(reason.clone());
        }
        events
    }

    fn open_text(&mut self, events: &mut Vec<Event>) {
        let output_index = self.output.len();
        let item_id = new_id("msg");
        let mut item = message_item(&item_id, "", "in_progress");
        if let OutputItem::Message { content, .. } = &mut item {
            content.clear();
        }
        // In place until `close` writes the finished item: output indexes stay stable.
        self.output.push(item.clone());
        events.push(self.event(
            "response.output_item.added",
            json!({"output_index": output_index, "item": item}),
        ));
        let part = json!({"type": "output_text", "text": "", "annotations": []});
        let fields = json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": part});
        events.push(self.event("response.content_part.added", fields));
        self.open = Some(Open::Text {
            output_index,
            item_id,
            text: String::new(),
        });
    }

    fn on_tool_delta(&mut self, call: &ToolCallDelta, events: &mut Vec<Event>) {
        let tool_index = call.index;
        let function = call.function.as_ref();
        let same = matches!(&self.open, Some(Open::Call { tool_index: t, .. }) if *t == tool_index);
        if !same {
            self.close("completed", events);
            let output_index = self.output.len();
            let item_id = new_id("fc");
            let call_id = call.id.clone().unwrap_or_else(|| new_id("call"));
            let name = function.and_then(|f| f.name.clone()).unwrap_or_default();
            let item = call_item(&item_id, &call_id, &name, "", "in_progress");
            self.output.push(item.clone());
            events.push(self.event(
                "response.output_item.added",
                json!({"output_index": output_index, "item": item}),
            ));
            self.open = Some(Open::Call {
                tool_index,
                output_index,
                item_id,
                call_id,
                name,
                arguments: String::new(),
            });
        } else if let Some(Open::Call { name, .. }) = &mut self.open {
            // Some upstreams send the name in pieces after the first chunk.
            if let Some(more) = function.and_then(|f| f.name.as_deref()) {
                name.push_str(more);
            }
        }
        let piece = function
            .and_then(|f| f.arguments.as_deref())
            .unwrap_or_default();
        if piece.is_empty() {
            return;
        }
        if let Some(Open::Call {
            output_index,
            item_id,
            arguments,
            ..
        }) = &mut self.open
        {
            arguments.push_str(piece);
            let fields = json!({"item_id": item_id, "output_index": output_index, "delta": piece});
            events.push(self.event("response.function_call_arguments.delta", fields));
        }
    }

    /// Closes the open item with its `.done` events.
    fn close(&mut self, status: &'static str, events: &mut Vec<Event>) {
        match self.open.take() {
            None => {}
            Some(Open::Text {
                output_index,
                item_id,
                text,
            }) => {
                let fields = json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": text, "logprobs": []});
                events.push(self.event("response.output_text.done", fields));
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                let fields = json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": part});
                events.push(self.event("response.content_part.done", fields));
                let item = message_item(&item_id, &text, status);
                self.output[output_index] = item.clone();
                events.push(self.event(
                    "response.output_item.done",
                    json!({"output_index": output_index, "item": item}),
                ));
            }
            Some(Open::Call {
                output_index,
                item_id,
                call_id,
                name,
                arguments,
                ..
            }) => {
                let fields = json!({"item_id": item_id, "output_index": output_index, "name": name, "arguments": arguments});
                events.push(self.event("response.function_call_arguments.done", fields));
                let item = call_item(&item_id, &call_id, &name, &arguments, status);
                self.output[output_index] = item.clone();
                events.push(self.event(
                    "response.output_item.done",
                    json!({"output_index": output_index, "item": item}),
                ));
            }
        }
    }

    /// The upstream stream ended: closes the open item and returns its events with the outcome.
    pub fn finish(&mut self) -> (Outcome, Vec<Event>) {
        let outcome = Outcome::from_finish(self.finish_reason.as_deref());
        let mut events = Vec::new();
        self.close(outcome.item_status(), &mut events);
        (outcome, events)
    }

    /// The output as it stands, open items included (as `incomplete`), for a failed stream.
    pub fn partial_output(&self) -> Vec<OutputItem> {
        let mut output = self.output.clone();
        match &self.open {
            Some(Open::Text {
                output_index,
                item_id,
                text,
            }) => {
                output[*output_index] = message_item(item_id, text, "incomplete");
            }
            Some(Open::Call {
                output_index,
                item_id,
                call_id,
                name,
                arguments,
                ..
            }) => {
                output[*output_index] = call_item(item_id, call_id, name, arguments, "incomplete");
            }
            None => {}
        }
        output
    }

    /// The terminal event for a finished response object.
    pub fn terminal(&mut self, outcome: &Outcome, response: &ResponseObject) -> Event {
        let kind = match outcome {
            Outcome::Completed => "response.completed",
            Outcome::Incomplete(_) => "response.incomplete",
            Outcome::Failed { .. } => "response.failed",
        };
        self.event(kind, json!({"response": response}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(delta: Value, finish: Option<&str>) -> CompletionChunk {
        CompletionChunk::from_json(
            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
        .expect("a chunk")
    }

    #[test]
    fn text_then_call_events_in_order() {
        let mut s = StreamState::new();
        let mut kinds = Vec::new();
        let mut push = |evs: Vec<Event>| kinds.extend(evs.into_iter().map(|e| e.0));
        push(s.on_chunk(&chunk(json!({"role": "assistant", "content": "Hel"}), None)));
        push(s.on_chunk(&chunk(json!({"content": "lo"}), None)));
        push(s.on_chunk(&chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{\"a\""}}]}),
            None,
        )));
        push(s.on_chunk(&chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}),
            Some("tool_calls"),
        )));
        let (outcome, evs) = s.finish();
        push(evs);
        assert_eq!(outcome, Outcome::Completed);
        assert_eq!(
            kinds,
            [
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
            ]
        );
        let output = serde_json::to_value(&s.output).expect("json");
        assert_eq!(output[0]["content"][0]["text"], "Hello");
        assert_eq!(output[0]["status"], "completed");
        assert_eq!(output[1]["type"], "function_call");
        assert_eq!(output[1]["arguments"], "{\"a\":1}");
        assert_eq!(output[1]["call_id"], "call_1");
    }

    #[test]
    fn length_is_incomplete() {
        let completion = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "cut"}, "finish_reason": "length"}]});
        let completion = Completion::from_json(completion).expect("a completion");
        let (outcome, output, _) = from_completion(&completion);
        assert_eq!(outcome, Outcome::Incomplete("max_output_tokens"));
        let output = serde_json::to_value(&output).expect("json");
        assert_eq!(output[0]["status"], "incomplete");
        assert_eq!(
            output[0]["content"],
            json!([{"type": "output_text", "text": "cut", "annotations": []}])
        );
    }
}
