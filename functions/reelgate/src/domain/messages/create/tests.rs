//! The Messages API's refusals of bad bodies, pinned as a client sees them (Anthropic's
//! envelope carries the error's message, its type `invalid_request_error` for every 400): the
//! model first, as the use case checks it, then the body's shape and the translation's rules.

use super::*;
use crate::domain::error::ErrorKind;
use crate::domain::params::read_body;
use crate::ports::fetch::{FetchError, Fetched, Fetcher};
use serde_json::{json, Value};

/// A fake fetcher that refuses every URL: no body here gets as far as a fetch.
struct FakeRefusingFetcher;

#[async_trait::async_trait]
impl Fetcher for FakeRefusingFetcher {
    async fn fetch(&self, _: &str, _: u64) -> Result<Fetched, FetchError> {
        Err(FetchError::Refused)
    }
    async fn post(&self, _: &str, _: &[(&str, String)], _: Vec<u8>) -> Result<u16, FetchError> {
        Err(FetchError::Refused)
    }
    async fn check(&self, _: &str) -> Result<(), FetchError> {
        Err(FetchError::Refused)
    }
}

/// A model that takes text, tools, images and reasoning (two efforts).
fn model() -> ChatModel {
    ChatModel {
        id: "m".into(),
        upstream: "u".into(),
        upstream_model: None,
        deployments: Vec::new(),
        capabilities: ["text", "tools", "vision"].map(str::to_owned).to_vec(),
        reasoning_efforts: vec!["low".into(), "high".into()],
        context_window: 1000,
        input_per_million: rust_decimal::Decimal::ZERO,
        output_per_million: rust_decimal::Decimal::ZERO,
        cached_input_per_million: None,
        cache_write_per_million: None,
        auto_cache: false,
        cache_min_tokens: None,
        currency: "usd".into(),
        owned_by: None,
    }
}

/// A body the Messages API answers: `fields` over a model, `max_tokens` and one message.
fn with(fields: Value) -> Value {
    let mut body =
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]});
    for (k, v) in fields.as_object().expect("fields") {
        body[k] = v.clone();
    }
    body
}

/// `with`, less `field`.
fn without(field: &str) -> Value {
    let mut body = with(json!({}));
    body.as_object_mut().unwrap().remove(field);
    body
}

/// A count's body: a model and one message, with `fields`.
fn counting(fields: Value) -> Value {
    let mut body = without("max_tokens");
    for (k, v) in fields.as_object().expect("fields") {
        body[k] = v.clone();
    }
    body
}

fn user(blocks: Value) -> Value {
    with(json!({"messages": [{"role": "user", "content": blocks}]}))
}

/// Which route: a message to answer, or a prompt to count.
#[derive(Clone, Copy, Debug)]
enum Purpose {
    Create,
    CountTokens,
}

/// The refusal a client gets for `body` on the route `purpose` names, for [`model`]: the body
/// read as the edge reads it, then translated as the use case does.
async fn refusal(body: Value, purpose: Purpose) -> (String, String) {
    let bytes = serde_json::to_vec(&body).expect("JSON");
    let read = match purpose {
        Purpose::Create => read_body::<MessageCreateRequest>(&bytes).map(MessagesRequest::Create),
        Purpose::CountTokens => {
            read_body::<MessageCountTokensRequest>(&bytes).map(MessagesRequest::CountTokens)
        }
    };
    let e = match read {
        Err(e) => e,
        Ok(request) => request::translate(
            &FakeRefusingFetcher,
            &crate::ports::pdf::NoRasterizer,
            &model(),
            request,
            Served::Translated,
        )
        .await
        .expect_err("refused"),
    };
    assert_eq!(e.kind, ErrorKind::InvalidRequest, "{}", e.message);
    assert_eq!(e.code, "invalid_request_error", "{}", e.message);
    (e.param.unwrap_or_default(), e.message)
}

#[tokio::test]
async fn bad_bodies_are_refused_as_before() {
    use Purpose::{CountTokens, Create};
    let one_tool = json!([{"name": "f", "input_schema": {"type": "object"}}]);
    let cases: Vec<(Value, Purpose, &str, &str)> = vec![
        // Top-level fields: unknown, missing, of the wrong type or range.
        (with(json!({"n": 2})), Create, "n", "n: Extra inputs are not permitted."),
        (
            with(json!({"response_format": {"type": "json_object"}})),
            Create,
            "response_format",
            "response_format: Extra inputs are not permitted.",
        ),
        (without("model"), Create, "model", "model is required."),
        (with(json!({"model": null})), Create, "model", "model is required."),
        (with(json!({"model": 5})), Create, "model", "model must be a non-empty string."),
        (with(json!({"model": ""})), Create, "model", "model must be a non-empty string."),
        (without("max_tokens"), Create, "max_tokens", "max_tokens: Field required."),
        (with(json!({"max_tokens": null})), Create, "max_tokens", "max_tokens: Field required."),
        (
            with(json!({"max_tokens": "5"})),
            Create,
            "max_tokens",
            "max_tokens: Input should be an integer of at least 1.",
        ),
        (
            with(json!({"max_tokens": 0})),
            Create,
            "max_tokens",
            "max_tokens: Input should be an integer of at least 1.",
        ),
        (
            with(json!({"max_tokens": 1.5})),
            Create,
            "max_tokens",
            "max_tokens: Input should be an integer of at least 1.",
        ),
        (
            with(json!({"max_tokens": -1})),
            Create,
            "max_tokens",
            "max_tokens: Input should be an integer of at least 1.",
        ),
        (without("messages"), Create, "messages", "messages: Field required."),
        (with(json!({"messages": null})), Create, "messages", "messages: Field required."),
        (
            with(json!({"messages": "hi"})),
            Create,
            "messages",
            "messages: Input should be a list.",
        ),
        (
            with(json!({"messages": []})),
            Create,
            "messages",
            "messages: At least one message is required.",
        ),
        (
            with(json!({"stream": "yes"})),
            Create,
            "stream",
            "stream: Input should be a valid boolean.",
        ),
        (
            with(json!({"temperature": "hot"})),
            Create,
            "temperature",
            "temperature: Input should be a number from 0 to 1.",
        ),
        (
            with(json!({"temperature": 1.5})),
            Create,
            "temperature",
            "temperature: Input should be a number from 0 to 1.",
        ),
        (
            with(json!({"top_p": -0.1})),
            Create,
            "top_p",
            "top_p: Input should be a number from 0 to 1.",
        ),
        (
            with(json!({"top_k": -1})),
            Create,
            "top_k",
            "top_k: Input should be a non-negative integer.",
        ),
        (
            with(json!({"top_k": "5"})),
            Create,
            "top_k",
            "top_k: Input should be a non-negative integer.",
        ),
        (
            with(json!({"stop_sequences": "END"})),
            Create,
            "stop_sequences",
            "stop_sequences: Input should be a list of strings.",
        ),
        (
            with(json!({"stop_sequences": ["a", "b", "c", "d", "e"]})),
            Create,
            "stop_sequences",
            "stop_sequences: At most 4 stop sequences are accepted.",
        ),
        (
            with(json!({"stop_sequences": ["a", 3]})),
            Create,
            "stop_sequences.1",
            "stop_sequences.1: Input should be a non-empty string.",
        ),
        (
            with(json!({"stop_sequences": [""]})),
            Create,
            "stop_sequences.0",
            "stop_sequences.0: Input should be a non-empty string.",
        ),
        (
            with(json!({"metadata": "u-1"})),
            Create,
            "metadata",
            "metadata: Input should be an object.",
        ),
        (
            with(json!({"metadata": {"user": "u-1"}})),
            Create,
            "metadata.user",
            "metadata.user: Extra inputs are not permitted.",
        ),
        (
            with(json!({"metadata": {"user_id": 5}})),
            Create,
            "metadata.user_id",
            "metadata.user_id: Input should be a string.",
        ),
        // system
        (
            with(json!({"system": 5})),
            Create,
            "system",
            "system: Input should be a string or a list of text blocks.",
        ),
        (
            with(json!({"system": ["Be brief."]})),
            Create,
            "system.0",
            "system.0: Input should be an object.",
        ),
        (
            with(json!({"system": [{"type": "image"}]})),
            Create,
            "system.0.type",
            "system.0.type: System blocks must be text.",
        ),
        (
            with(json!({"system": [{"type": "text"}]})),
            Create,
            "system.0.text",
            "system.0.text: Field required (a string).",
        ),
        // thinking
        (
            with(json!({"thinking": "on"})),
            Create,
            "thinking",
            "thinking: Input should be an object.",
        ),
        (
            with(json!({"thinking": {"type": "maybe"}})),
            Create,
            "thinking.type",
            "thinking.type: Input should be 'enabled' or 'disabled'.",
        ),
        (
            with(json!({"thinking": {"type": "enabled", "budget_tokens": 10}})),
            Create,
            "thinking.budget_tokens",
            "thinking.budget_tokens: Input should be an integer of at least 1024.",
        ),
        (
            with(json!({"max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 2000}})),
            Create,
            "thinking.budget_tokens",
            "thinking.budget_tokens: Input should be less than max_tokens.",
        ),
        // tools and tool_choice
        (
            with(json!({"tools": {"name": "f"}})),
            Create,
            "tools",
            "tools: Input should be a list.",
        ),
        (
            with(json!({"tools": ["f"]})),
            Create,
            "tools.0",
            "tools.0: Input should be an object.",
        ),
        (
            with(json!({"tools": [{"input_schema": {"type": "object"}}]})),
            Create,
            "tools.0.name",
            "tools.0.name: Field required (a string).",
        ),
        (
            with(json!({"tools": [{"name": "f"}]})),
            Create,
            "tools.0.input_schema",
            "tools.0.input_schema: Field required (a JSON schema object).",
        ),
        (
            with(json!({"tools": [{"type": "web_search_20250305", "name": "w"}]})),
            Create,
            "tools.0.type",
            "tools.0.type: The server tool 'web_search_20250305' is not supported here; only client tools (name, description, input_schema) are.",
        ),
        (
            with(json!({"tools": one_tool, "tool_choice": "auto"})),
            Create,
            "tool_choice",
            "tool_choice: Input should be an object.",
        ),
        (
            with(json!({"tools": one_tool, "tool_choice": {"type": "sometimes"}})),
            Create,
            "tool_choice.type",
            "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'.",
        ),
        (
            with(json!({"tool_choice": {"type": "any"}})),
            Create,
            "tool_choice",
            "tool_choice: tool_choice needs tools.",
        ),
        (
            with(json!({"tools": one_tool, "tool_choice": {"type": "tool", "name": "g"}})),
            Create,
            "tool_choice.name",
            "tool_choice.name: No tool named 'g' is in tools.",
        ),
        // messages and their blocks
        (
            with(json!({"messages": ["hi"]})),
            Create,
            "messages.0",
            "messages.0: Input should be an object.",
        ),
        (
            with(json!({"messages": [{"role": "system", "content": "x"}]})),
            Create,
            "messages.0.role",
            "messages.0.role: Input should be 'user' or 'assistant'.",
        ),
        (
            user(json!(5)),
            Create,
            "messages.0.content",
            "messages.0.content: Input should be a string or a list of content blocks.",
        ),
        (
            user(json!([{"type": "video"}])),
            Create,
            "messages.0.content.0.type",
            "messages.0.content.0.type: Input should be 'text', 'image', 'document' or 'tool_result'.",
        ),
        (
            user(json!([{"type": "tool_use", "id": "t", "name": "f", "input": {}}])),
            Create,
            "messages.0.content.0.type",
            "messages.0.content.0.type: A 'tool_use' block belongs in an assistant message.",
        ),
        (
            user(json!([{"type": "image", "source": {"type": "file", "file_id": "f"}}])),
            Create,
            "messages.0.content.0.source.type",
            "messages.0.content.0.source.type: Input should be 'base64' or 'url'.",
        ),
        (
            user(json!([{"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "x"}}])),
            Create,
            "messages.0.content.0.source.media_type",
            "messages.0.content.0.source.media_type: Input should be one of image/jpeg, image/png, image/gif, image/webp.",
        ),
        (
            user(json!([{"type": "text", "text": "x", "cache_control": {"type": "persistent"}}])),
            Create,
            "messages.0.content.0.cache_control.type",
            "messages.0.content.0.cache_control.type: Input should be 'ephemeral'.",
        ),
        (
            with(json!({"messages": [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]},
            ]})),
            Create,
            "messages.1.content.0.type",
            "messages.1.content.0.type: An assistant message takes 'text', 'tool_use' and 'thinking' blocks.",
        ),
        // A count takes neither max_tokens nor the answer's fields.
        (
            counting(json!({"max_tokens": 5})),
            CountTokens,
            "max_tokens",
            "max_tokens: Extra inputs are not permitted.",
        ),
        (
            counting(json!({"stream": true})),
            CountTokens,
            "stream",
            "stream: Extra inputs are not permitted.",
        ),
        (
            counting(json!({"metadata": {"user_id": "u"}})),
            CountTokens,
            "metadata",
            "metadata: Extra inputs are not permitted.",
        ),
        (
            counting(json!({"foo": 1})),
            CountTokens,
            "foo",
            "foo: Extra inputs are not permitted.",
        ),
        (
            {
                let mut body = counting(json!({}));
                body.as_object_mut().unwrap().remove("messages");
                body
            },
            CountTokens,
            "messages",
            "messages: Field required.",
        ),
        (
            counting(json!({"model": 7})),
            CountTokens,
            "model",
            "model must be a non-empty string.",
        ),
    ];
    assert_eq!(cases.len(), 61);
    let mut wrong = Vec::new();
    for (body, purpose, param, message) in cases {
        let got = refusal(body.clone(), purpose).await;
        if got != (param.to_owned(), message.to_owned()) {
            wrong.push(format!(
                "{body} ({purpose:?}): got {got:?}, pinned ({param:?}, {message:?})"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
