//! The Responses API end to end: a real server (`reelgate_embedded::testing`) with a FAKE upstream that
//! records every chat request it receives and answers by a small script keyed on the last
//! message. Run with `cargo test -p reelgate --features contract --test responses`.

use async_trait::async_trait;
use base64::Engine;
use futures::StreamExt;
use reelgate::domain::catalog::Catalog;
use reelgate::ports::upstream::{ChatUpstream, ChunkStream, UpstreamError};
use reelgate_embedded::testing::{Tenant, TestServer};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// FAKE upstream. Replies by the last message:
/// - a tool message → `tool said: <content>`;
/// - user text with `CALL_TOOL` → a `get_weather` call (`finish_reason: tool_calls`);
/// - user text with `FAIL_MIDSTREAM` → one chunk, then a broken stream;
/// - user text with `GATED` (streamed) → one chunk, then waits for `gate` before the rest;
/// - `max_completion_tokens` below 10 → the text cut short with `finish_reason: length`;
/// - anything else → `echo: <text>`.
#[derive(Default)]
struct FakeUpstreamScripted {
    requests: Mutex<Vec<Value>>,
    gate: Arc<Notify>,
}

impl FakeUpstreamScripted {
    fn requests(&self) -> Vec<Value> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
    fn last(&self) -> Value {
        self.requests()
            .last()
            .cloned()
            .expect("the upstream got a request")
    }
}

enum Reply {
    Text(String, &'static str),
    Call,
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn script(request: &Value) -> Reply {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    if last["role"] == "tool" {
        return Reply::Text(format!("tool said: {}", text_of(&last)), "stop");
    }
    let text = text_of(&last);
    if text.contains("CALL_TOOL") {
        return Reply::Call;
    }
    if request["max_completion_tokens"]
        .as_u64()
        .is_some_and(|n| n < 10)
    {
        return Reply::Text("this answer is cut".into(), "length");
    }
    Reply::Text(format!("echo: {text}"), "stop")
}

fn usage(request: &Value) -> Value {
    let prompt = request["messages"].as_array().map_or(0, Vec::len) as u64 * 10;
    json!({"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7,
           "prompt_tokens_details": {"cached_tokens": 3}, "completion_tokens_details": {"reasoning_tokens": 2}})
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "fake",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[async_trait]
impl ChatUpstream for FakeUpstreamScripted {
    async fn complete(
        &self,
        request: reelgate::ports::upstream::ChatCompletionRequest,
    ) -> Result<reelgate::ports::upstream::Completion, UpstreamError> {
        let request = request.to_json();
        if let Ok(mut r) = self.requests.lock() {
            r.push(request.clone());
        }
        let (message, finish) = match script(&request) {
            Reply::Text(t, finish) => (json!({"role": "assistant", "content": t}), finish),
            Reply::Call => (
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_fake_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
                ]}),
                "tool_calls",
            ),
        };
        reelgate::ports::upstream::Completion::from_json(
            json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": request["model"],
                  "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage(&request)}),
        )
    }

    async fn stream(
        &self,
        request: reelgate::ports::upstream::ChatCompletionRequest,
    ) -> Result<ChunkStream, UpstreamError> {
        let request = request.to_json();
        if let Ok(mut r) = self.requests.lock() {
            r.push(request.clone());
        }
        let last_text = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(text_of)
            .unwrap_or_default();
        let mut chunks: Vec<Result<Value, UpstreamError>> =
            vec![Ok(chunk(json!({"role": "assistant", "content": ""}), None))];
        let finish = match script(&request) {
            Reply::Text(t, finish) => {
                let chars: Vec<char> = t.chars().collect();
                for piece in chars.chunks(4) {
                    chunks.push(Ok(chunk(
                        json!({"content": piece.iter().collect::<String>()}),
                        None,
                    )));
                }
                finish
            }
            Reply::Call => {
                chunks.push(Ok(chunk(
                    json!({"tool_calls": [{"index": 0, "id": "call_fake_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\""}}]}),
                    None,
                )));
                chunks.push(Ok(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": ":\"Paris\"}"}}]}),
                    None,
                )));
                "tool_calls"
            }
        };
        if last_text.contains("FAIL_MIDSTREAM") {
            chunks.truncate(2);
            chunks.push(Err(UpstreamError::Unreachable(
                "connection reset by FAKE".into(),
            )));
        } else {
            chunks.push(Ok(chunk(json!({}), Some(finish))));
            let mut tail = chunk(json!({}), None);
            tail["choices"] = json!([]);
            tail["usage"] = usage(&request);
            chunks.push(Ok(tail));
        }
        let mut chunks: Vec<_> = chunks
            .into_iter()
            .map(|c| c.and_then(reelgate::ports::upstream::CompletionChunk::from_json))
            .collect();
        if last_text.contains("GATED") {
            // Hold everything after the first two chunks until the test opens the gate: the
            // client must already have seen the first text delta by then.
            let rest = chunks.split_off(2);
            let first = futures::stream::iter(chunks);
            let gate = self.gate.clone();
            let waited = futures::stream::once(async move {
                gate.notified().await;
                futures::stream::iter(rest)
            })
            .flatten();
            return Ok(Box::pin(first.chain(waited)));
        }
        Ok(Box::pin(futures::stream::iter(chunks)))
    }
}

const TEST_CATALOG: &str = r#"
[[upstreams]]
id = "fake"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[[chat_models]]
id = "fake-chat"
upstream = "fake"
capabilities = ["text", "tools", "vision"]
reasoning_efforts = ["low", "high"]
context_window = 4000
input_per_million = "1000"
output_per_million = "2000"

[[chat_models]]
id = "fake-text-only"
upstream = "fake"
capabilities = ["text", "tools"]
"#;

struct Env {
    server: TestServer,
    fake: Arc<FakeUpstreamScripted>,
    http: reqwest::Client,
    alice: Tenant,
}

async fn env() -> Env {
    let text = format!(
        "{}\n{TEST_CATALOG}",
        reelgate::domain::catalog::DEFAULT_CATALOG
    );
    let catalog = Catalog::parse(&text).expect("test catalog");
    let fake = Arc::new(FakeUpstreamScripted::default());
    let registered = fake.clone();
    let server =
        TestServer::start_with(catalog, move |app| app.upstreams.insert("fake", registered)).await;
    let alice = server.tenant("100.00").await;
    Env {
        server,
        fake,
        http: reqwest::Client::new(),
        alice,
    }
}

impl Env {
    async fn post(&self, who: &Tenant, body: Value) -> (u16, Value) {
        let res = self
            .http
            .post(self.server.url("/v1/responses"))
            .bearer_auth(&who.key)
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, who: &Tenant, path: &str) -> (u16, Value) {
        let res = self
            .http
            .get(self.server.url(path))
            .bearer_auth(&who.key)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    async fn delete(&self, who: &Tenant, path: &str) -> (u16, Value) {
        let res = self
            .http
            .delete(self.server.url(path))
            .bearer_auth(&who.key)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// POSTs a streamed request and returns the raw SSE text.
    async fn post_stream(&self, who: &Tenant, body: Value) -> (u16, String) {
        let res = self
            .http
            .post(self.server.url("/v1/responses"))
            .bearer_auth(&who.key)
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = res.status().as_u16();
        (status, res.text().await.expect("body"))
    }

    /// Uploads a file through `POST /v1/files` (multipart written by hand).
    async fn upload(&self, who: &Tenant, purpose: &str, name: &str, bytes: &[u8]) -> String {
        let boundary = "reelgate-test-boundary";
        let mut body = Vec::new();
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n").as_bytes(),
        );
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let res = self
            .http
            .post(self.server.url("/v1/files"))
            .bearer_auth(&who.key)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body)
            .send()
            .await
            .expect("upload");
        assert_eq!(res.status().as_u16(), 200, "upload of {name}");
        let file: Value = res.json().await.expect("file json");
        file["id"].as_str().expect("file id").to_owned()
    }
}

fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message")
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect()
}

fn assert_error(got: &(u16, Value), status: u16, code: &str, param: Option<&str>) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["error"]["code"], code, "{}", got.1);
    if let Some(param) = param {
        assert_eq!(got.1["error"]["param"], param, "{}", got.1);
    }
}

/// Parses SSE text into (event name, JSON or raw data) pairs.
fn parse_sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = Some(e.trim().to_owned());
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            (event, data)
        })
        .collect()
}

/// Checks the framing every responses stream shares and returns the events' JSON.
fn check_stream(text: &str) -> Vec<Value> {
    let blocks = parse_sse(text);
    let (last_event, last_data) = blocks.last().expect("events");
    assert_eq!(last_data, "[DONE]", "the stream ends with data: [DONE]");
    assert!(last_event.is_none());
    let events: Vec<Value> = blocks[..blocks.len() - 1]
        .iter()
        .map(|(name, data)| {
            let v: Value = serde_json::from_str(data).expect("event JSON");
            assert_eq!(
                name.as_deref(),
                v["type"].as_str(),
                "event: line matches type"
            );
            v
        })
        .collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(
            e["sequence_number"], i as u64,
            "sequence numbers count up from 0"
        );
    }
    let ids: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|e| e["response"]["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 1, "one response id throughout");
    events
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn three_turns_through_previous_response_id_send_the_whole_history() {
    let env = env().await;
    let a = &env.alice;
    let (s, r1) = env
        .post(
            a,
            json!({"model": "fake-chat", "instructions": "Be brief.", "input": "My name is Ada."}),
        )
        .await;
    assert_eq!(s, 200, "{r1}");
    assert_eq!(r1["object"], "response");
    assert_eq!(r1["status"], "completed");
    assert_eq!(output_text(&r1), "echo: My name is Ada.");
    assert_eq!(r1["usage"]["input_tokens"], 20);
    assert_eq!(r1["usage"]["output_tokens"], 7);
    assert_eq!(r1["usage"]["total_tokens"], 27);
    assert_eq!(r1["usage"]["input_tokens_details"]["cached_tokens"], 3);
    assert_eq!(r1["usage"]["output_tokens_details"]["reasoning_tokens"], 2);

    let (s, r2) = env
        .post(a, json!({"model": "fake-chat", "previous_response_id": r1["id"], "input": "What is my name?"}))
        .await;
    assert_eq!(s, 200, "{r2}");
    let (s, r3) = env
        .post(a, json!({"model": "fake-chat", "previous_response_id": r2["id"],
                        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Say it again."}]}]}))
        .await;
    assert_eq!(s, 200, "{r3}");
    assert_eq!(r3["previous_response_id"], r2["id"]);

    let sent = env.fake.last();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    // Instructions are not carried over from an earlier response (as in OpenAI's API).
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    let texts: Vec<String> = sent["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(text_of)
        .collect();
    assert_eq!(
        texts,
        [
            "My name is Ada.",
            "echo: My name is Ada.",
            "What is my name?",
            "echo: What is my name?",
            "Say it again."
        ]
    );
    assert_eq!(
        env.fake.requests()[0]["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );

    // Stored, retrievable, with its own input items listed.
    let (s, got) = env
        .get(
            a,
            &format!("/v1/responses/{}", r3["id"].as_str().expect("id")),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(got, r3);
    let (s, items) = env
        .get(
            a,
            &format!(
                "/v1/responses/{}/input_items",
                r3["id"].as_str().expect("id")
            ),
        )
        .await;
    assert_eq!(s, 200, "{items}");
    assert_eq!(items["object"], "list");
    assert_eq!(items["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(items["data"][0]["content"][0]["text"], "Say it again.");
    assert!(items["data"][0]["id"]
        .as_str()
        .is_some_and(|id| id.starts_with("msg_")));

    // Charged by usage at the model's prices, one ledger entry per response.
    let entry = reelgate::domain::billing::token_charges::ledger_entry(
        env.server.app.context(),
        &a.org,
        r1["id"].as_str().expect("id"),
    )
    .await
    .expect("ledger")
    .expect("a ledger entry");
    // 20 × 1000/1e6 + 7 × 2000/1e6 = 0.034 (the ledger's sign convention is usage.rs's).
    let amount = entry
        .get("amount")
        .and_then(reelgate::ports::store::Attr::as_decimal)
        .expect("amount");
    assert_eq!(amount.abs(), "0.034".parse().expect("dec"));
}

#[tokio::test]
async fn a_stream_sends_typed_events_in_order_and_is_stored() {
    let env = env().await;
    let (s, text) = env
        .post_stream(
            &env.alice,
            json!({"model": "fake-chat", "input": "hello there", "stream": true}),
        )
        .await;
    assert_eq!(s, 200);
    let events = check_stream(&text);
    let k = kinds(&events);
    assert_eq!(
        k[..5],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta"
        ]
    );
    let deltas = k
        .iter()
        .filter(|t| **t == "response.output_text.delta")
        .count();
    assert!(deltas >= 3, "the text arrives in pieces: {k:?}");
    assert_eq!(
        k[4 + deltas..],
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let joined: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(joined, "echo: hello there");
    let completed = events.last().expect("completed");
    assert_eq!(completed["response"]["status"], "completed");
    assert_eq!(output_text(&completed["response"]), "echo: hello there");
    assert_eq!(completed["response"]["usage"]["input_tokens"], 10);
    assert_eq!(events[0]["response"]["status"], "in_progress");
    // The upstream was asked to stream with usage.
    assert_eq!(env.fake.last()["stream_options"]["include_usage"], true);

    let id = completed["response"]["id"].as_str().expect("id");
    let (s, got) = env.get(&env.alice, &format!("/v1/responses/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(output_text(&got), "echo: hello there");
}

#[tokio::test]
async fn stream_events_are_forwarded_as_the_upstream_produces_them() {
    let env = env().await;
    let res = env
        .http
        .post(env.server.url("/v1/responses"))
        .bearer_auth(&env.alice.key)
        .json(&json!({"model": "fake-chat", "input": "GATED hello", "stream": true}))
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 200);
    let mut body = res.bytes_stream();
    let mut seen = String::new();
    // The first text delta arrives while the upstream is still held at the gate.
    while !seen.contains("response.output_text.delta") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), body.next())
            .await
            .expect("the first delta arrives before the upstream finishes")
            .expect("more body")
            .expect("bytes");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(!seen.contains("response.completed"));
    env.fake.gate.notify_one();
    while let Some(chunk) = tokio::time::timeout(std::time::Duration::from_secs(10), body.next())
        .await
        .expect("rest")
    {
        seen.push_str(&String::from_utf8_lossy(&chunk.expect("bytes")));
    }
    let events = check_stream(&seen);
    assert_eq!(events.last().expect("end")["type"], "response.completed");
}

#[tokio::test]
async fn a_function_call_is_continued_by_its_output() {
    let env = env().await;
    let a = &env.alice;
    let tools = json!([{"type": "function", "name": "get_weather", "description": "Weather by city",
                        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let (s, r1) = env
        .post(a, json!({"model": "fake-chat", "input": "CALL_TOOL weather in Paris?", "tools": tools, "tool_choice": "auto", "parallel_tool_calls": false}))
        .await;
    assert_eq!(s, 200, "{r1}");
    let call = &r1["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["call_id"], "call_fake_1");
    assert_eq!(call["arguments"], "{\"city\":\"Paris\"}");
    let sent = env.fake.last();
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(sent["tool_choice"], "auto");
    assert_eq!(sent["parallel_tool_calls"], false);

    // Through previous_response_id: only the output is sent.
    let (s, r2) = env
        .post(a, json!({"model": "fake-chat", "previous_response_id": r1["id"], "tools": tools,
                        "input": [{"type": "function_call_output", "call_id": "call_fake_1", "output": "22C and sunny"}]}))
        .await;
    assert_eq!(s, 200, "{r2}");
    assert_eq!(output_text(&r2), "tool said: 22C and sunny");
    let messages = env.fake.last()["messages"]
        .as_array()
        .cloned()
        .expect("messages");
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_fake_1");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Paris\"}"
    );
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": "call_fake_1", "content": "22C and sunny"})
    );

    // Without stored history: the caller sends the call back itself (SDK style `input += output`).
    let mut input = vec![json!({"role": "user", "content": "CALL_TOOL weather in Paris?"})];
    input.extend(r1["output"].as_array().cloned().unwrap_or_default());
    input.push(json!({"type": "function_call_output", "call_id": "call_fake_1", "output": "18C"}));
    let (s, r3) = env
        .post(
            a,
            json!({"model": "fake-chat", "input": input, "store": false}),
        )
        .await;
    assert_eq!(s, 200, "{r3}");
    assert_eq!(output_text(&r3), "tool said: 18C");

    // An output for a call that was never made is refused.
    let got = env
        .post(a, json!({"model": "fake-chat", "input": [{"type": "function_call_output", "call_id": "nope", "output": "x"}]}))
        .await;
    assert_error(&got, 400, "invalid_request_error", Some("input"));
}

#[tokio::test]
async fn a_streamed_function_call_has_argument_events() {
    let env = env().await;
    let tools =
        json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]);
    let (s, text) = env
        .post_stream(
            &env.alice,
            json!({"model": "fake-chat", "input": "CALL_TOOL", "tools": tools, "stream": true}),
        )
        .await;
    assert_eq!(s, 200);
    let events = check_stream(&text);
    assert_eq!(
        kinds(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(events[5]["arguments"], "{\"city\":\"Paris\"}");
    let done = &events[6]["item"];
    assert_eq!(done["type"], "function_call");
    assert_eq!(done["call_id"], "call_fake_1");
    assert_eq!(done["name"], "get_weather");

    // Continued after the stream through previous_response_id.
    let id = events[7]["response"]["id"].clone();
    let (s, r2) = env
        .post(&env.alice, json!({"model": "fake-chat", "previous_response_id": id,
                                 "input": [{"type": "function_call_output", "call_id": "call_fake_1", "output": "rain"}]}))
        .await;
    assert_eq!(s, 200, "{r2}");
    assert_eq!(output_text(&r2), "tool said: rain");
}

/// A two-page PDF, written by hand with its cross-reference offsets counted.
fn two_page_pdf() -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R >>".to_owned(),
        "<< /Length 22 >>\nstream\n1 0 0 rg 10 10 80 40 re f\nendstream".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 200] /Contents 6 0 R >>".to_owned(),
        "<< /Length 22 >>\nstream\n0 0 1 rg 10 10 40 80 re f\nendstream".to_owned(),
    ];
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        pdf.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}

/// Decodes a data URL (or fetches a URL) and checks it is a PNG or JPEG image.
async fn decode_image(url: &str) -> image::DynamicImage {
    let bytes = match url.strip_prefix("data:") {
        Some(rest) => {
            let (_, b64) = rest.split_once(";base64,").expect("base64 data URL");
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .expect("base64")
        }
        None => reqwest::get(url)
            .await
            .expect("fetch")
            .bytes()
            .await
            .expect("bytes")
            .to_vec(),
    };
    let format = image::guess_format(&bytes).expect("an image format");
    assert!(
        matches!(format, image::ImageFormat::Png | image::ImageFormat::Jpeg),
        "{format:?}"
    );
    image::load_from_memory(&bytes).expect("decodes")
}

fn image_urls(message: &Value) -> Vec<String> {
    message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .filter_map(|p| p["image_url"]["url"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_two_page_pdf_is_forwarded_as_two_images() {
    let env = env().await;
    let a = &env.alice;
    let pdf = two_page_pdf();
    let file_id = env.upload(a, "user_data", "doc.pdf", &pdf).await;
    let (s, r) = env
        .post(
            a,
            json!({"model": "fake-chat", "input": [{"role": "user", "content": [
                {"type": "input_text", "text": "Summarize."},
                {"type": "input_file", "file_id": file_id}
            ]}]}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let sent = env.fake.last();
    let user = &sent["messages"][0];
    assert_eq!(
        user["content"][0],
        json!({"type": "text", "text": "Summarize."})
    );
    let urls = image_urls(user);
    assert_eq!(urls.len(), 2, "one image per page");
    let first = decode_image(&urls[0]).await;
    let second = decode_image(&urls[1]).await;
    // Page 1 is landscape, page 2 portrait: the pages are in order.
    assert!(first.width() > first.height());
    assert!(second.height() > second.width());

    // The same PDF inline as file_data.
    let b64 = base64::engine::general_purpose::STANDARD.encode(&pdf);
    let (s, r) = env
        .post(a, json!({"model": "fake-chat", "input": [{"role": "user", "content": [
            {"type": "input_file", "filename": "doc.pdf", "file_data": format!("data:application/pdf;base64,{b64}")}
        ]}]}))
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(image_urls(&env.fake.last()["messages"][0]).len(), 2);

    // A vision file by file_id becomes a presigned URL that serves the image.
    let png = {
        let img = image::RgbImage::from_pixel(4, 3, image::Rgb([200, 10, 10]));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png)
            .expect("png");
        out.into_inner()
    };
    let image_id = env.upload(a, "vision", "red.png", &png).await;
    let (s, r) = env
        .post(
            a,
            json!({"model": "fake-chat", "input": [{"role": "user", "content": [
                {"type": "input_image", "file_id": image_id, "detail": "low"}
            ]}]}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    let sent = env.fake.last();
    let urls = image_urls(&sent["messages"][0]);
    assert_eq!(urls.len(), 1);
    assert!(urls[0].starts_with("http"), "a presigned URL: {}", urls[0]);
    assert_eq!(
        sent["messages"][0]["content"][0]["image_url"]["detail"],
        "low"
    );
    assert_eq!(decode_image(&urls[0]).await.width(), 4);

    // Another organization's file does not exist for this one.
    let eve = env.server.tenant("10").await;
    let got = env
        .post(
            &eve,
            json!({"model": "fake-chat", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": file_id}]}]}),
        )
        .await;
    assert_error(&got, 404, "file_not_found", Some("file_id"));

    // input_image needs purpose vision; images need a vision model; PDFs too.
    let got = env
        .post(a, json!({"model": "fake-chat", "input": [{"role": "user", "content": [{"type": "input_image", "file_id": file_id}]}]}))
        .await;
    assert_error(&got, 400, "invalid_request_error", Some("file_id"));
    let got = env
        .post(a, json!({"model": "fake-text-only", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": file_id}]}]}))
        .await;
    assert_error(&got, 400, "model_capability_mismatch", Some("input"));
}

#[tokio::test]
async fn video_and_audio_files_point_to_chat_completions() {
    let env = env().await;
    let a = &env.alice;
    // A minimal MP4 header (ftyp box) is enough for the sniffer to call it video.
    let mut mp4 = vec![0, 0, 0, 0x18];
    mp4.extend_from_slice(b"ftypisom\0\0\x02\0isomiso2");
    mp4.extend_from_slice(&[0u8; 64]);
    let video_id = env.upload(a, "user_data", "clip.mp4", &mp4).await;
    let got = env
        .post(a, json!({"model": "fake-chat", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": video_id}]}]}))
        .await;
    assert_error(&got, 400, "unsupported_file_type", Some("file_id"));
    assert!(got.1["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("/v1/chat/completions"));
}

#[tokio::test]
async fn stored_responses_are_private_to_their_person() {
    let env = env().await;
    let a = &env.alice;
    let bob = env.server.member(&a.org).await;
    let eve = env.server.tenant("10").await;
    let (s, r1) = env
        .post(a, json!({"model": "fake-chat", "input": "secret plans"}))
        .await;
    assert_eq!(s, 200);
    let id = r1["id"].as_str().expect("id").to_owned();
    let (_, items) = env.get(a, &format!("/v1/responses/{id}/input_items")).await;
    let item_id = items["data"][0]["id"].as_str().expect("item id").to_owned();
    let output_id = r1["output"][0]["id"]
        .as_str()
        .expect("output id")
        .to_owned();

    for other in [&bob, &eve] {
        assert_error(
            &env.get(other, &format!("/v1/responses/{id}")).await,
            404,
            "response_not_found",
            Some("response_id"),
        );
        assert_error(
            &env.get(other, &format!("/v1/responses/{id}/input_items"))
                .await,
            404,
            "response_not_found",
            None,
        );
        assert_error(
            &env.delete(other, &format!("/v1/responses/{id}")).await,
            404,
            "response_not_found",
            None,
        );
        let got = env
            .post(
                other,
                json!({"model": "fake-chat", "previous_response_id": id, "input": "continue"}),
            )
            .await;
        assert_error(
            &got,
            404,
            "response_not_found",
            Some("previous_response_id"),
        );
        let got = env
            .post(other, json!({"model": "fake-chat", "input": [{"type": "item_reference", "id": item_id}, {"role": "user", "content": "and?"}]}))
            .await;
        assert_error(&got, 404, "item_not_found", Some("input[0].id"));
    }

    // The owner can reference both an input and an output item.
    let (s, r2) = env
        .post(
            a,
            json!({"model": "fake-chat", "input": [
                {"type": "item_reference", "id": item_id},
                {"type": "item_reference", "id": output_id},
                {"role": "user", "content": "go on"}
            ]}),
        )
        .await;
    assert_eq!(s, 200, "{r2}");
    let texts: Vec<String> = env.fake.last()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(text_of)
        .collect();
    assert_eq!(texts, ["secret plans", "echo: secret plans", "go on"]);

    // Deleting removes the response and its items.
    let (s, deleted) = env.delete(a, &format!("/v1/responses/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(
        deleted,
        json!({"id": id, "object": "response", "deleted": true})
    );
    assert_error(
        &env.get(a, &format!("/v1/responses/{id}")).await,
        404,
        "response_not_found",
        None,
    );
    let got = env
        .post(
            a,
            json!({"model": "fake-chat", "input": [{"type": "item_reference", "id": item_id}]}),
        )
        .await;
    assert_error(&got, 404, "item_not_found", Some("input[0].id"));
}

#[tokio::test]
async fn store_false_is_not_retrievable() {
    let env = env().await;
    let (s, r) = env
        .post(
            &env.alice,
            json!({"model": "fake-chat", "input": "x", "store": false}),
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(r["store"], false);
    let id = r["id"].as_str().expect("id");
    assert_error(
        &env.get(&env.alice, &format!("/v1/responses/{id}")).await,
        404,
        "response_not_found",
        None,
    );
    let got = env
        .post(
            &env.alice,
            json!({"model": "fake-chat", "previous_response_id": id, "input": "y"}),
        )
        .await;
    assert_error(
        &got,
        404,
        "response_not_found",
        Some("previous_response_id"),
    );
}

#[tokio::test]
async fn a_length_finish_is_incomplete() {
    let env = env().await;
    let (s, r) = env
        .post(
            &env.alice,
            json!({"model": "fake-chat", "input": "long story", "max_output_tokens": 5}),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["status"], "incomplete");
    assert_eq!(r["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(r["max_output_tokens"], 5);
    assert_eq!(env.fake.last()["max_completion_tokens"], 5);

    let (_, text) = env
        .post_stream(&env.alice, json!({"model": "fake-chat", "input": "long story", "max_output_tokens": 5, "stream": true}))
        .await;
    let events = check_stream(&text);
    let last = events.last().expect("last");
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
}

#[tokio::test]
async fn an_upstream_failure_mid_stream_is_response_failed() {
    let env = env().await;
    let (s, text) = env
        .post_stream(
            &env.alice,
            json!({"model": "fake-chat", "input": "FAIL_MIDSTREAM", "stream": true}),
        )
        .await;
    assert_eq!(s, 200);
    let events = check_stream(&text);
    let last = events.last().expect("last");
    assert_eq!(last["type"], "response.failed");
    assert_eq!(last["response"]["status"], "failed");
    assert_eq!(last["response"]["error"]["code"], "upstream_unavailable");
    assert!(last["response"]["error"]["message"].is_string());
    // Failed responses are stored but never billed.
    let id = last["response"]["id"].as_str().expect("id");
    let (s, got) = env.get(&env.alice, &format!("/v1/responses/{id}")).await;
    assert_eq!(s, 200);
    assert_eq!(got["status"], "failed");
    assert!(reelgate::domain::billing::token_charges::ledger_entry(
        env.server.app.context(),
        &env.alice.org,
        id
    )
    .await
    .expect("ledger")
    .is_none());
}

#[tokio::test]
async fn invalid_requests_name_their_parameter() {
    let env = env().await;
    let a = &env.alice;
    let mut cases: Vec<(Value, u16, &str, Option<&str>)> = vec![
        (
            json!({"model": "fake-chat", "input": "x", "temperature": 2.1}),
            400,
            "invalid_request_error",
            Some("temperature"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "top_p": 1.5}),
            400,
            "invalid_request_error",
            Some("top_p"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "max_output_tokens": 0}),
            400,
            "invalid_request_error",
            Some("max_output_tokens"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "stop": ["1", "2", "3", "4", "5"]}),
            400,
            "invalid_request_error",
            Some("stop"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "truncation": "maybe"}),
            400,
            "invalid_request_error",
            Some("truncation"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "reasoning": {"effort": "extreme"}}),
            400,
            "unsupported_reasoning_effort",
            Some("reasoning.effort"),
        ),
        (
            json!({"model": "fake-text-only", "input": "x", "reasoning": {"effort": "low"}}),
            400,
            "unsupported_reasoning_effort",
            Some("reasoning.effort"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "reasoning": {"summary": "verbose"}}),
            400,
            "invalid_request_error",
            Some("reasoning.summary"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "tool_choice": {"type": "function", "name": "nope"}}),
            400,
            "invalid_request_error",
            Some("tool_choice"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "metadata": {"k": 1}}),
            400,
            "invalid_request_error",
            Some("metadata"),
        ),
        (
            json!({"model": "fake-chat", "input": [{"role": "robot", "content": "x"}]}),
            400,
            "invalid_request_error",
            Some("input[0].role"),
        ),
        (
            json!({"model": "fake-chat", "input": [{"type": "item_reference", "id": "msg_nope"}]}),
            404,
            "item_not_found",
            Some("input[0].id"),
        ),
        (
            json!({"model": "fake-chat", "input": "x", "previous_response_id": "resp_nope"}),
            404,
            "response_not_found",
            Some("previous_response_id"),
        ),
        (
            json!({"model": "reel-1", "input": "x"}),
            400,
            "model_not_chat_capable",
            Some("model"),
        ),
        (
            json!({"model": "no-such-model", "input": "x"}),
            404,
            "model_not_found",
            Some("model"),
        ),
        (
            json!({"model": "fake-chat", "input": "x".repeat(20_000)}),
            400,
            "context_length_exceeded",
            Some("input"),
        ),
    ];
    // file_url is fetched by the service, so private addresses are refused.
    cases.push((
        json!({"model": "fake-chat", "input": [{"role": "user", "content": [
            {"type": "input_file", "file_url": "http://127.0.0.1:9/doc.pdf"}
        ]}]}),
        400,
        "url_refused",
        Some("file_url"),
    ));
    for (body, status, code, param) in cases {
        let got = env.post(a, body.clone()).await;
        assert_error(&got, status, code, param);
    }
    // A valid effort passes through as the chat parameter.
    let (s, _) = env.post(a, json!({"model": "fake-chat", "input": "x", "reasoning": {"effort": "high", "summary": "auto"}})).await;
    assert_eq!(s, 200);
    assert_eq!(env.fake.last()["reasoning_effort"], "high");
}

#[tokio::test]
async fn auto_truncation_drops_the_oldest_turns() {
    let env = env().await;
    let a = &env.alice;
    let long = "word ".repeat(1000); // ~1250 tokens, and as much again for its echo
    let (_, r1) = env
        .post(
            a,
            json!({"model": "fake-chat", "input": format!("one {long}")}),
        )
        .await;
    let (_, r2) = env.post(a, json!({"model": "fake-chat", "input": format!("two {long}"), "previous_response_id": r1["id"]})).await;
    let got = env
        .post(
            a,
            json!({"model": "fake-chat", "input": "three", "previous_response_id": r2["id"]}),
        )
        .await;
    assert_error(&got, 400, "context_length_exceeded", Some("input"));
    let (s, r3) = env
        .post(a, json!({"model": "fake-chat", "input": "three", "previous_response_id": r2["id"], "truncation": "auto"}))
        .await;
    assert_eq!(s, 200, "{r3}");
    assert_eq!(r3["truncation"], "auto");
    let texts: Vec<String> = env.fake.last()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(text_of)
        .collect();
    assert_eq!(texts.len(), 3, "the first turn was dropped: {texts:?}");
    assert!(texts[0].starts_with("two"));
    assert_eq!(texts[2], "three");
}

#[tokio::test]
async fn billing_admits_only_a_positive_balance() {
    let env = env().await;
    let broke = env.server.tenant("0").await;
    let got = env
        .post(&broke, json!({"model": "fake-chat", "input": "x"}))
        .await;
    assert_error(&got, 402, "insufficient_credits", None);
    let (s, _) = env
        .post_stream(
            &broke,
            json!({"model": "fake-chat", "input": "x", "stream": true}),
        )
        .await;
    assert_eq!(s, 402);
}

/// Runs tests/python/test_responses.py (pytest + the official `openai` SDK) against a real
/// gateway serving tests/python/catalog.toml, with tests/python/fake_upstream.py as the upstream.
/// Runs only when `REELGATE_PYTHON` names a Python that has `openai` and `pytest` installed;
/// otherwise it says so and passes, except under CI where it fails.
#[tokio::test]
async fn python_sdk_suite() {
    let Some(python) = reelgate_embedded::testing::python_or_skip("python_sdk_suite") else {
        return;
    };
    let rig = reelgate_embedded::testing::PythonRig::start(python).await;
    let owner = rig.server.tenant("10").await;
    let teammate = rig.server.member(&owner.org).await;
    let other_org = rig.server.tenant("10").await;
    rig.pytest(
        "test_responses.py",
        &[
            ("REELGATE_API_KEY", &owner.key),
            ("REELGATE_SECOND_API_KEY", &teammate.key),
            ("REELGATE_OTHER_ORG_API_KEY", &other_org.key),
        ],
    )
    .await;
}

#[tokio::test]
async fn an_abandoned_stream_is_cancelled_charged_and_not_stored() {
    let env = env().await;
    let res = env
        .http
        .post(env.server.url("/v1/responses"))
        .bearer_auth(&env.alice.key)
        .json(&json!({"model": "fake-chat", "input": "GATED then leave", "stream": true}))
        .send()
        .await
        .expect("request");
    let mut body = res.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("response.output_text.delta") {
        let chunk = body.next().await.expect("more").expect("bytes");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let id = seen
        .split("\"id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the response id")
        .to_owned();
    // Leave while the upstream is still held at the gate: it never reports usage, so after
    // reading on for `DRAIN_AFTER_LEAVE` (30 s) the gateway cancels it and charges the estimate.
    drop(body);
    let deadline = std::time::Instant::now()
        + reelgate::domain::chat::stream::DRAIN_AFTER_LEAVE
        + std::time::Duration::from_secs(10);
    let mut entry = None;
    while entry.is_none() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        entry = reelgate::domain::billing::token_charges::ledger_entry(
            env.server.app.context(),
            &env.alice.org,
            &id,
        )
        .await
        .expect("ledger");
    }
    let entry = entry.expect("the spent tokens were charged");
    assert_eq!(
        entry.get("estimated"),
        Some(&reelgate::ports::store::Attr::Bool(true))
    );
    assert_error(
        &env.get(&env.alice, &format!("/v1/responses/{id}")).await,
        404,
        "response_not_found",
        None,
    );
}

#[tokio::test]
async fn input_items_page_newest_first() {
    let env = env().await;
    let a = &env.alice;
    let input: Vec<Value> = (0..5)
        .map(|i| json!({"role": "user", "content": format!("part {i}")}))
        .collect();
    let (s, r) = env
        .post(a, json!({"model": "fake-chat", "input": input}))
        .await;
    assert_eq!(s, 200, "{r}");
    let id = r["id"].as_str().expect("id");
    let text = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                i["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    let (_, page) = env
        .get(a, &format!("/v1/responses/{id}/input_items?limit=2"))
        .await;
    assert_eq!(text(&page), ["part 4", "part 3"]);
    assert_eq!(page["has_more"], true);
    let after = page["last_id"].as_str().expect("last id");
    let (_, page) = env
        .get(
            a,
            &format!("/v1/responses/{id}/input_items?limit=10&after={after}"),
        )
        .await;
    assert_eq!(text(&page), ["part 2", "part 1", "part 0"]);
    assert_eq!(page["has_more"], false);
    let (_, page) = env
        .get(
            a,
            &format!("/v1/responses/{id}/input_items?order=asc&limit=1"),
        )
        .await;
    assert_eq!(text(&page), ["part 0"]);
    let got = env
        .get(a, &format!("/v1/responses/{id}/input_items?limit=101"))
        .await;
    assert_error(&got, 400, "invalid_request_error", Some("limit"));
}
