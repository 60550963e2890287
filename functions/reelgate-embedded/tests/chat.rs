//! The chat completions gateway end to end: a real reelgate server (`TestServer`) in front of a
//! `FakeUpstream` — a real HTTP server inside the test that speaks the OpenAI chat protocol from
//! a script — reached through the real OpenAI-compatible adapter.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use reelgate::domain::catalog::{Catalog, ChatModel, UpstreamConfig, DEFAULT_CATALOG};
use reelgate_embedded::testing::{Tenant, TestServer};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The fake upstream

/// What the fake answers to the next chat request.
#[derive(Clone)]
enum Reply {
    /// A `chat.completion` body.
    Complete(Value),
    /// SSE chunks, each sent `gap` after the previous one, then `[DONE]`.
    Stream { chunks: Vec<Value>, gap: Duration },
    /// An error status with OpenAI's error envelope.
    Fail(u16, &'static str),
}

#[derive(Default)]
struct FakeState {
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Value>>,
    /// Bytes the fake fetched from the image/video/audio URLs it was given.
    fetched: Mutex<Vec<(String, Vec<u8>)>>,
    /// Streams the fake started, and how many of them ended early because the reader left.
    streams_started: AtomicUsize,
    streams_dropped_early: AtomicUsize,
    models: Mutex<Vec<String>>,
}

struct FakeUpstream {
    base_url: String,
    state: Arc<FakeState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeUpstream {
    async fn start() -> FakeUpstream {
        Self::start_after(Duration::ZERO).await
    }

    /// Listens only once `delay` has passed: until then connecting to it is refused.
    async fn start_after(delay: Duration) -> FakeUpstream {
        let state = Arc::new(FakeState::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(fake_chat))
            .route("/v1/models", get(fake_models))
            .with_state(state.clone());
        // Reserve a free port, release it, and bind it again after the delay.
        let reserved = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = reserved.local_addr().expect("addr");
        drop(reserved);
        let base_url = format!("http://{addr}");
        let listener = if delay.is_zero() {
            Some(tokio::net::TcpListener::bind(addr).await.expect("bind"))
        } else {
            None
        };
        let task = tokio::spawn(async move {
            let listener = match listener {
                Some(l) => l,
                None => {
                    tokio::time::sleep(delay).await;
                    tokio::net::TcpListener::bind(addr)
                        .await
                        .expect("bind later")
                }
            };
            let _ = axum::serve(listener, app).await;
        });
        FakeUpstream {
            base_url,
            state,
            task,
        }
    }

    fn push(&self, reply: Reply) {
        self.state.script.lock().expect("lock").push_back(reply);
    }

    fn requests(&self) -> Vec<Value> {
        self.state.requests.lock().expect("lock").clone()
    }

    fn last_request(&self) -> Value {
        self.requests()
            .last()
            .cloned()
            .expect("the fake got a request")
    }
}

/// Notes on drop whether the stream was read to its end.
struct StreamGuard {
    state: Arc<FakeState>,
    finished: bool,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.state
                .streams_dropped_early
                .fetch_add(1, Ordering::SeqCst);
        }
    }
}

async fn fake_models(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let data: Vec<Value> = state
        .models
        .lock()
        .expect("lock")
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

async fn fake_chat(State(state): State<Arc<FakeState>>, Json(body): Json<Value>) -> Response {
    // Fetch every media URL, as a real vision model would, to prove the URL works.
    for message in body["messages"].as_array().cloned().unwrap_or_default() {
        for part in message["content"].as_array().cloned().unwrap_or_default() {
            for kind in ["image_url", "video_url", "audio_url"] {
                if let Some(url) = part[kind]["url"].as_str().filter(|u| u.starts_with("http")) {
                    let bytes = match reqwest::get(url).await {
                        Ok(r) if r.status().is_success() => {
                            r.bytes().await.map(|b| b.to_vec()).unwrap_or_default()
                        }
                        _ => Vec::new(),
                    };
                    state
                        .fetched
                        .lock()
                        .expect("lock")
                        .push((url.to_owned(), bytes));
                }
            }
        }
    }
    state.requests.lock().expect("lock").push(body.clone());
    let reply = state.script.lock().expect("lock").pop_front();
    match reply {
        Some(Reply::Complete(v)) => Json(v).into_response(),
        Some(Reply::Fail(status, message)) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            Json(json!({"error": {"message": message, "type": "server_error", "code": null}})),
        )
            .into_response(),
        Some(Reply::Stream { chunks, gap }) => {
            state.streams_started.fetch_add(1, Ordering::SeqCst);
            let guard = StreamGuard {
                state: state.clone(),
                finished: false,
            };
            let events = futures::stream::unfold(
                (chunks.into_iter(), guard, true),
                move |(mut it, mut guard, first)| async move {
                    if !first {
                        tokio::time::sleep(gap).await;
                    }
                    match it.next() {
                        Some(chunk) => Some((
                            Ok::<_, std::io::Error>(format!("data: {chunk}\n\n")),
                            (it, guard, false),
                        )),
                        None if !guard.finished => {
                            guard.finished = true;
                            Some((Ok("data: [DONE]\n\n".to_owned()), (it, guard, false)))
                        }
                        None => None,
                    }
                },
            );
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(events))
                .unwrap_or_default()
        }
        None => Json(completion("(no script)", None, 1, 1)).into_response(),
    }
}

fn completion(text: &str, tool_calls: Option<Value>, prompt: u64, completion_tokens: u64) -> Value {
    let mut message = json!({"role": "assistant", "content": text});
    let mut finish = "stop";
    if let Some(calls) = tool_calls {
        message["tool_calls"] = calls;
        message["content"] = Value::Null;
        finish = "tool_calls";
    }
    json!({
        "id": "upstream-id-123",
        "object": "chat.completion",
        "created": 1,
        "model": "fake-model-v1",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": prompt + completion_tokens},
    })
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "upstream-chunk",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fake-model-v1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn usage_chunk(prompt: u64, completion_tokens: u64) -> Value {
    json!({
        "id": "upstream-chunk",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fake-model-v1",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": prompt + completion_tokens},
    })
}

// ---------------------------------------------------------------------------------------------
// The gateway under test

const INPUT_PRICE: &str = "2.50";
const OUTPUT_PRICE: &str = "10.00";

fn chat_model(id: &str, upstream: &str, capabilities: &[&str], efforts: &[&str]) -> ChatModel {
    ChatModel {
        id: id.into(),
        upstream: upstream.into(),
        upstream_model: Some("fake-model-v1".into()),
        deployments: Vec::new(),
        capabilities: capabilities.iter().map(|c| c.to_string()).collect(),
        reasoning_efforts: efforts.iter().map(|c| c.to_string()).collect(),
        context_window: 8192,
        input_per_million: Decimal::from_str(INPUT_PRICE).expect("price"),
        output_per_million: Decimal::from_str(OUTPUT_PRICE).expect("price"),
        cached_input_per_million: None,
        cache_write_per_million: None,
        auto_cache: false,
        cache_min_tokens: None,
        currency: "usd".into(),
        owned_by: None,
    }
}

fn upstream_config(id: &str, base_url: &str) -> UpstreamConfig {
    UpstreamConfig {
        id: id.into(),
        kind: "openai".into(),
        base_url: Some(base_url.into()),
        api_key_env: None,
        region: None,
        extra_headers: Default::default(),
    }
}

struct Rig {
    fake: FakeUpstream,
    server: TestServer,
    tenant: Tenant,
    http: reqwest::Client,
}

async fn rig() -> Rig {
    rig_with_credits("10.00").await
}

async fn rig_with_credits(credits: &str) -> Rig {
    rig_configured(credits, |_| {}).await
}

async fn rig_configured(credits: &str, configure: impl FnOnce(&mut reelgate::app::App)) -> Rig {
    let fake = FakeUpstream::start().await;
    let mut catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    catalog
        .upstreams
        .push(upstream_config("fake", &fake.base_url));
    // Nothing listens on port 9 (discard): connecting fails at once.
    catalog
        .upstreams
        .push(upstream_config("down", "http://127.0.0.1:9"));
    catalog.chat_models.push(chat_model(
        "gpt-fake",
        "fake",
        &["text", "vision", "tools", "json_schema"],
        &["low", "high"],
    ));
    catalog
        .chat_models
        .push(chat_model("text-only", "fake", &["text"], &[]));
    catalog
        .chat_models
        .push(chat_model("gpt-down", "down", &["text"], &[]));
    let server = TestServer::start_with(catalog, configure).await;
    let tenant = server.tenant(credits).await;
    Rig {
        fake,
        server,
        tenant,
        http: reqwest::Client::new(),
    }
}

impl Rig {
    async fn post(&self, body: &Value) -> (StatusCode, Value) {
        self.post_as(&self.tenant.key, body).await
    }

    async fn post_as(&self, key: &str, body: &Value) -> (StatusCode, Value) {
        let r = self
            .http
            .post(self.server.url("/v1/chat/completions"))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .expect("send");
        let status = StatusCode::from_u16(r.status().as_u16()).expect("status");
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let r = self
            .http
            .get(self.server.url(path))
            .bearer_auth(&self.tenant.key)
            .send()
            .await
            .expect("send");
        let status = StatusCode::from_u16(r.status().as_u16()).expect("status");
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Streams a request; returns each SSE `data` payload with the time it arrived.
    async fn stream(&self, body: &Value) -> Vec<(Instant, String)> {
        let r = self
            .http
            .post(self.server.url("/v1/chat/completions"))
            .bearer_auth(&self.tenant.key)
            .json(body)
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), 200);
        assert!(r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream")));
        let mut bytes = r.bytes_stream();
        let mut buf = String::new();
        let mut events = Vec::new();
        while let Some(piece) = bytes.next().await {
            buf.push_str(&String::from_utf8_lossy(&piece.expect("body")));
            while let Some(end) = buf.find("\n\n") {
                let event: String = buf.drain(..end + 2).collect();
                for line in event.lines() {
                    if let Some(data) = line.strip_prefix("data: ") {
                        events.push((Instant::now(), data.to_owned()));
                    }
                }
            }
        }
        events
    }

    async fn balance(&self) -> Decimal {
        self.server
            .app
            .accounts()
            .org(&self.tenant.org)
            .await
            .expect("org")
            .balance
    }

    async fn available(&self) -> Decimal {
        self.server
            .app
            .accounts()
            .org(&self.tenant.org)
            .await
            .expect("org")
            .available
    }
}

fn hello(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "Say hello"}]})
}

fn cost(prompt: u64, completion: u64) -> Decimal {
    let million = Decimal::from(1_000_000);
    (Decimal::from(prompt) * Decimal::from_str(INPUT_PRICE).expect("p")
        + Decimal::from(completion) * Decimal::from_str(OUTPUT_PRICE).expect("p"))
        / million
}

async fn ledger_amount(rig: &Rig, completion_id: &str) -> Decimal {
    let entry = reelgate::domain::billing::token_charges::ledger_entry(
        rig.server.app.context(),
        &rig.tenant.org,
        completion_id,
    )
    .await
    .expect("store")
    .expect("a ledger entry for the completion");
    use reelgate::ports::store::ItemExt;
    entry.decimal_attr("amount").expect("amount")
}

// ---------------------------------------------------------------------------------------------
// Catalog

#[tokio::test]
async fn models_lists_chat_models_only_with_reasoning_efforts() {
    let rig = rig().await;
    let (status, list) = rig.get("/v1/models").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list["object"], "list");
    let ids: Vec<&str> = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"gpt-fake"));
    assert!(
        !ids.iter().any(|id| id.starts_with("reel-")),
        "video models are not chat models: {ids:?}"
    );
    let model = list["data"]
        .as_array()
        .expect("data")
        .iter()
        .find(|m| m["id"] == "gpt-fake")
        .expect("model");
    assert_eq!(model["object"], "model");
    assert_eq!(model["reasoning_efforts"], json!(["low", "high"]));
    assert_eq!(model["pricing"]["input_per_million"], "2.50");

    let (status, one) = rig.get("/v1/models/gpt-fake").await;
    assert_eq!(
        (status, one["id"].as_str()),
        (StatusCode::OK, Some("gpt-fake"))
    );
    let (status, err) = rig.get("/v1/models/reel-1").await;
    assert_eq!(
        (status, err["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("model_not_found"))
    );

    let anonymous = rig
        .http
        .get(rig.server.url("/v1/models"))
        .send()
        .await
        .expect("send");
    assert_eq!(anonymous.status().as_u16(), 401);
}

#[tokio::test]
async fn discovery_adds_the_upstreams_models_except_video_ids() {
    let fake = FakeUpstream::start().await;
    *fake.state.models.lock().expect("lock") = vec!["llama-local".into(), "reel-1".into()];
    let mut catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    // The variables as the service reads them: through the typed configuration.
    let config = reelgate::config::Config::from_vars([
        (
            "REELGATE_UPSTREAM_BASE_URL".to_owned(),
            fake.base_url.clone(),
        ),
        (
            "REELGATE_UPSTREAM_CAPABILITIES".to_owned(),
            "vision, tools".to_owned(),
        ),
    ])
    .expect("config");
    let discovery = config.upstream_discovery.expect("discovery configured");
    let found =
        reelgate::adapters::upstream_discovery::discover_upstream_models(&mut catalog, &discovery)
            .await;
    found.expect("discovery");
    let model = catalog.chat_model("llama-local").expect("discovered");
    assert_eq!(
        model.capabilities,
        vec!["vision".to_owned(), "tools".to_owned()]
    );
    assert_eq!(model.upstream, "env");
    assert!(
        catalog.chat_model("reel-1").is_none(),
        "a video id is not taken as a chat model"
    );

    // The discovered model is served through the environment's upstream.
    fake.push(Reply::Complete(completion("hi from local", None, 3, 2)));
    let server = TestServer::start_with(catalog, |_| {}).await;
    let tenant = server.tenant("1").await;
    let r = reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(&tenant.key)
        .json(&hello("llama-local"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["choices"][0]["message"]["content"], "hi from local");
    assert_eq!(fake.last_request()["model"], "llama-local");
}

// ---------------------------------------------------------------------------------------------
// Completions

#[tokio::test]
async fn plain_completion_is_restamped_and_charged_exactly() {
    let rig = rig().await;
    rig.fake
        .push(Reply::Complete(completion("Hello!", None, 12, 5)));
    let before = rig.balance().await;
    let (status, body) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["id"].as_str().expect("id");
    assert!(id.starts_with("chatcmpl-"), "{id}");
    assert_ne!(id, "upstream-id-123");
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-fake");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["message"]["content"], "Hello!");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["usage"]["total_tokens"], 17);

    let sent = rig.fake.last_request();
    assert_eq!(
        sent["model"], "fake-model-v1",
        "the upstream's own model name"
    );
    assert_eq!(sent["messages"][0]["content"], "Say hello");

    let expected = cost(12, 5);
    assert_eq!(expected, Decimal::from_str("0.00008").expect("d"));
    assert_eq!(before - rig.balance().await, expected);
    assert_eq!(
        rig.available().await,
        rig.balance().await,
        "available moves with balance"
    );
    assert_eq!(ledger_amount(&rig, id).await, expected);
}

#[tokio::test]
async fn parameters_are_forwarded_and_max_tokens_is_accepted() {
    let rig = rig().await;
    rig.fake.push(Reply::Complete(completion("ok", None, 1, 1)));
    let body = json!({
        "model": "gpt-fake",
        "messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "temperature": 0.2, "top_p": 0.9, "n": 1, "max_tokens": 50, "stop": ["\n\n"],
        "frequency_penalty": 0.5, "presence_penalty": -0.5, "logprobs": true, "top_logprobs": 3,
        "logit_bias": {"50256": -100}, "seed": 7, "user": "u-1", "top_k": 40, "min_p": 0.05,
        "repetition_penalty": 1.1, "reasoning_effort": "low",
        "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}},
    });
    let (status, reply) = rig.post(&body).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let sent = rig.fake.last_request();
    for key in [
        "temperature",
        "top_p",
        "max_tokens",
        "stop",
        "seed",
        "top_k",
        "min_p",
        "reasoning_effort",
        "logit_bias",
    ] {
        assert_eq!(sent[key], body[key], "{key} is forwarded");
    }
    assert_eq!(
        sent["messages"][0]["role"], "system",
        "developer travels as system"
    );
}

#[tokio::test]
async fn stream_with_include_usage_arrives_spaced_as_the_upstream_sent_it() {
    let rig = rig().await;
    let gap = Duration::from_millis(200);
    rig.fake.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": "Hel"}), None),
            chunk(json!({"content": "lo"}), None),
            chunk(json!({"content": "!"}), None),
            chunk(json!({}), Some("stop")),
            {
                let mut u = usage_chunk(9, 3);
                u["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 4});
                u
            },
        ],
        gap,
    });
    let before = rig.balance().await;
    let started = Instant::now();
    let events = rig
        .stream(&json!({"model": "gpt-fake", "messages": [{"role": "user", "content": "Hi"}], "stream": true,
            "stream_options": {"include_usage": true}}))
        .await;
    let total = started.elapsed();
    assert_eq!(events.last().map(|e| e.1.as_str()), Some("[DONE]"));
    let chunks: Vec<(Instant, Value)> = events[..events.len() - 1]
        .iter()
        .map(|(t, d)| (*t, serde_json::from_str(d).expect("json chunk")))
        .collect();
    assert_eq!(chunks.len(), 6, "five content chunks and the usage chunk");
    let id = chunks[0].1["id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("chatcmpl-"));
    for (_, c) in &chunks {
        assert_eq!(c["id"], id.as_str(), "one id, ours");
        assert_eq!(c["model"], "gpt-fake");
        assert_eq!(c["object"], "chat.completion.chunk");
    }
    for (_, c) in &chunks[..5] {
        assert!(
            c.get("usage").is_some_and(Value::is_null),
            "usage: null on content chunks: {c}"
        );
        assert_eq!(c["choices"].as_array().map(Vec::len), Some(1));
    }
    let last = &chunks[5].1;
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], 9);
    assert_eq!(last["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
    assert_eq!(last["usage"]["completion_tokens"], 3);
    let text: String = chunks
        .iter()
        .filter_map(|(_, c)| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello!");

    // Forwarded as they came: consecutive content chunks are about the upstream's gap apart,
    // and the first one arrived long before the stream ended (nothing was buffered).
    for pair in chunks[..5].windows(2) {
        let spacing = pair[1].0 - pair[0].0;
        assert!(
            spacing >= gap / 2,
            "chunks arrived {spacing:?} apart; the upstream spaced them {gap:?}"
        );
    }
    assert!(
        chunks[0].0 - started < total - gap * 2,
        "the first chunk waited for the stream to end"
    );

    assert_eq!(before - rig.balance().await, cost(9, 3));
    assert_eq!(ledger_amount(&rig, &id).await, cost(9, 3));
    assert_eq!(
        rig.fake.last_request()["stream_options"]["include_usage"],
        true
    );
}

#[tokio::test]
async fn stream_without_include_usage_has_no_usage_but_is_charged() {
    let rig = rig().await;
    rig.fake.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"role": "assistant", "content": "Hi"}), None),
            chunk(json!({}), Some("stop")),
            usage_chunk(4, 1),
        ],
        gap: Duration::from_millis(5),
    });
    let events = rig.stream(&json!({"model": "gpt-fake", "messages": [{"role": "user", "content": "Hi"}], "stream": true})).await;
    let datas: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(datas.len(), 3, "{datas:?}");
    assert_eq!(datas[2], "[DONE]");
    for d in &datas[..2] {
        let c: Value = serde_json::from_str(d).expect("json");
        assert!(
            c.get("usage").is_none(),
            "no usage key without include_usage: {c}"
        );
    }
    let id = serde_json::from_str::<Value>(datas[0]).expect("json")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // The upstream was asked for usage anyway, for billing.
    assert_eq!(
        rig.fake.last_request()["stream_options"]["include_usage"],
        true
    );
    assert_eq!(ledger_amount(&rig, &id).await, cost(4, 1));
}

// ---------------------------------------------------------------------------------------------
// Tools

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])
}

#[tokio::test]
async fn two_step_parallel_tool_call_round_trip() {
    let rig = rig().await;
    let calls = json!([
        {"id": "call_paris", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_tokyo", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"}},
    ]);
    rig.fake
        .push(Reply::Complete(completion("", Some(calls.clone()), 30, 20)));
    rig.fake.push(Reply::Complete(completion(
        "Paris 18°C, Tokyo 22°C.",
        None,
        60,
        10,
    )));
    let mut messages = vec![json!({"role": "user", "content": "Weather in Paris and Tokyo?"})];
    let (status, first) = rig
        .post(
            &json!({"model": "gpt-fake", "messages": messages, "tools": weather_tool(),
            "tool_choice": "auto", "parallel_tool_calls": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let choice = &first["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["tool_calls"], calls);
    assert_eq!(rig.fake.last_request()["tools"], weather_tool());
    assert_eq!(rig.fake.last_request()["parallel_tool_calls"], true);

    messages.push(choice["message"].clone());
    messages.push(json!({"role": "tool", "tool_call_id": "call_paris", "content": "18°C"}));
    messages.push(json!({"role": "tool", "tool_call_id": "call_tokyo", "content": "22°C"}));
    let (status, second) = rig
        .post(&json!({"model": "gpt-fake", "messages": messages, "tools": weather_tool()}))
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_eq!(
        second["choices"][0]["message"]["content"],
        "Paris 18°C, Tokyo 22°C."
    );
    let sent = rig.fake.last_request();
    assert_eq!(sent["messages"][1]["tool_calls"], calls);
    assert_eq!(
        sent["messages"][2],
        json!({"role": "tool", "tool_call_id": "call_paris", "content": "18°C"})
    );
    assert_eq!(sent["messages"][3]["tool_call_id"], "call_tokyo");
}

#[tokio::test]
async fn streamed_parallel_tool_calls_pass_through() {
    let rig = rig().await;
    rig.fake.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"role": "assistant", "content": null, "tool_calls": [
                {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}), None),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}), None),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}), None),
            chunk(json!({"tool_calls": [
                {"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]}), None),
            chunk(json!({}), Some("tool_calls")),
            usage_chunk(20, 15),
        ],
        gap: Duration::from_millis(5),
    });
    let events = rig
        .stream(&json!({"model": "gpt-fake", "messages": [{"role": "user", "content": "Oslo and Rome?"}],
            "tools": weather_tool(), "stream": true}))
        .await;
    let mut args = [String::new(), String::new()];
    let mut ids = [String::new(), String::new()];
    let mut finish = None;
    for (_, data) in events.iter().filter(|e| e.1 != "[DONE]") {
        let c: Value = serde_json::from_str(data).expect("json");
        for call in c["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let i = call["index"].as_u64().expect("index") as usize;
            if let Some(id) = call["id"].as_str() {
                ids[i] = id.to_owned();
            }
            args[i].push_str(call["function"]["arguments"].as_str().unwrap_or_default());
        }
        if let Some(f) = c["choices"][0]["finish_reason"].as_str() {
            finish = Some(f.to_owned());
        }
    }
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(ids, ["call_a".to_owned(), "call_b".to_owned()]);
    assert_eq!(
        args,
        [
            "{\"city\":\"Oslo\"}".to_owned(),
            "{\"city\":\"Rome\"}".to_owned()
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Files

/// A valid 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

async fn upload(rig: &Rig, key: &str, purpose: &str, filename: &str, bytes: &[u8]) -> String {
    let boundary = "reelgate-test-boundary";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let r = rig
        .http
        .post(rig.server.url("/v1/files"))
        .bearer_auth(key)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body)
        .send()
        .await
        .expect("upload");
    assert_eq!(r.status().as_u16(), 200);
    let file: Value = r.json().await.expect("json");
    file["id"].as_str().expect("file id").to_owned()
}

#[tokio::test]
async fn image_by_file_id_reaches_the_upstream_as_a_fetchable_url() {
    let rig = rig().await;
    let file_id = upload(&rig, &rig.tenant.key, "vision", "pixel.png", PNG).await;
    rig.fake
        .push(Reply::Complete(completion("A single pixel.", None, 100, 4)));
    rig.fake
        .push(Reply::Complete(completion("Still a pixel.", None, 100, 4)));
    let (status, body) = rig
        .post(
            &json!({"model": "gpt-fake", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "file", "file": {"file_id": file_id}}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let sent = rig.fake.last_request();
    let part = &sent["messages"][0]["content"][1];
    assert_eq!(part["type"], "image_url");
    let url = part["image_url"]["url"].as_str().expect("url");
    assert!(
        url.starts_with("http"),
        "a signed URL, not the file id: {url}"
    );
    {
        let fetched = rig.fake.state.fetched.lock().expect("lock");
        assert_eq!(fetched.len(), 1);
        assert_eq!(fetched[0].1, PNG, "the URL serves the uploaded PNG");
    }

    // An image_url part may name the file too, keeping its detail.
    let (status, _) = rig
        .post(
            &json!({"model": "gpt-fake", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": file_id, "detail": "low"}}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let part = &rig.fake.last_request()["messages"][0]["content"][0];
    assert_eq!(part["image_url"]["detail"], "low");
    assert_eq!(rig.fake.state.fetched.lock().expect("lock")[1].1, PNG);
}

#[tokio::test]
async fn another_organizations_file_is_not_found() {
    let rig = rig().await;
    let other = rig.server.tenant("1").await;
    let file_id = upload(&rig, &other.key, "vision", "theirs.png", PNG).await;
    let (status, body) = rig
        .post(
            &json!({"model": "gpt-fake", "messages": [{"role": "user", "content": [
            {"type": "file", "file": {"file_id": file_id}}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "file_not_found");
    assert_eq!(
        body["error"]["param"],
        "messages[0].content[0].file.file_id"
    );
    assert!(rig.fake.requests().is_empty());
}

#[tokio::test]
async fn an_image_file_for_a_text_only_model_is_a_capability_mismatch() {
    let rig = rig().await;
    let file_id = upload(&rig, &rig.tenant.key, "vision", "pixel.png", PNG).await;
    let (status, body) = rig
        .post(
            &json!({"model": "text-only", "messages": [{"role": "user", "content": [
            {"type": "file", "file": {"file_id": file_id}}]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "model_capability_mismatch");
    assert_eq!(body["error"]["param"], "messages[0].content[0]");
}

// ---------------------------------------------------------------------------------------------
// Refusals

#[tokio::test]
async fn every_validation_error_names_its_param() {
    let rig = rig().await;
    let user = json!([{"role": "user", "content": "Hi"}]);
    let with = |extra: Value| {
        let mut body = json!({"model": "gpt-fake", "messages": user.clone()});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        body
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!({"messages": user.clone()}), "model"),
        (json!({"model": 5, "messages": user.clone()}), "model"),
        (json!({"model": "gpt-fake"}), "messages"),
        (with(json!({"messages": []})), "messages"),
        (with(json!({"messages": "hi"})), "messages"),
        (
            with(json!({"messages": [{"role": "wizard", "content": "x"}]})),
            "messages[0].role",
        ),
        (
            with(json!({"messages": [{"role": "user"}]})),
            "messages[0].content",
        ),
        (
            with(json!({"messages": [{"role": "user", "content": 3}]})),
            "messages[0].content",
        ),
        (
            with(json!({"messages": [{"role": "user", "content": [{"type": "hologram"}]}]})),
            "messages[0].content[0].type",
        ),
        (
            with(json!({"messages": [{"role": "user", "content": [{"type": "text"}]}]})),
            "messages[0].content[0].text",
        ),
        (
            with(
                json!({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": "ftp://x"}}]}]}),
            ),
            "messages[1].content[1].image_url.url",
        ),
        (
            with(
                json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "ultra"}}]}]}),
            ),
            "messages[0].content[0].image_url.detail",
        ),
        (
            with(
                json!({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "midi"}}]}]}),
            ),
            "messages[0].content[0].input_audio.format",
        ),
        (
            with(
                json!({"messages": [{"role": "user", "content": [{"type": "file", "file": {}}]}]}),
            ),
            "messages[0].content[0].file.file_id",
        ),
        (
            with(json!({"messages": [{"role": "tool", "content": "x"}]})),
            "messages[0].tool_call_id",
        ),
        (
            with(json!({"messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]})),
            "messages[0].tool_call_id",
        ),
        (
            with(json!({"messages": [{"role": "assistant"}]})),
            "messages[0].content",
        ),
        (
            with(
                json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}]}),
            ),
            "messages[0].tool_calls[0].function.arguments",
        ),
        (with(json!({"temperature": 2.5})), "temperature"),
        (with(json!({"temperature": "hot"})), "temperature"),
        (with(json!({"top_p": 1.5})), "top_p"),
        (with(json!({"n": 0})), "n"),
        (with(json!({"n": 129})), "n"),
        (with(json!({"n": 1.5})), "n"),
        (with(json!({"max_tokens": 0})), "max_tokens"),
        (
            with(json!({"max_completion_tokens": -1})),
            "max_completion_tokens",
        ),
        (
            with(json!({"max_tokens": 5, "max_completion_tokens": 5})),
            "max_tokens",
        ),
        (with(json!({"stop": ["a", "b", "c", "d", "e"]})), "stop"),
        (with(json!({"stop": [1]})), "stop[0]"),
        (with(json!({"stop": 7})), "stop"),
        (
            with(json!({"frequency_penalty": -2.1})),
            "frequency_penalty",
        ),
        (with(json!({"presence_penalty": 2.1})), "presence_penalty"),
        (with(json!({"logprobs": "yes"})), "logprobs"),
        (
            with(json!({"logprobs": true, "top_logprobs": 21})),
            "top_logprobs",
        ),
        (with(json!({"top_logprobs": 2})), "top_logprobs"),
        (
            with(json!({"logit_bias": {"50256": 101}})),
            "logit_bias.50256",
        ),
        (with(json!({"logit_bias": {"abc": 1}})), "logit_bias.abc"),
        (with(json!({"logit_bias": [1]})), "logit_bias"),
        (
            with(json!({"response_format": {"type": "yaml"}})),
            "response_format.type",
        ),
        (
            with(json!({"response_format": {"type": "json_schema"}})),
            "response_format.json_schema",
        ),
        (
            with(
                json!({"response_format": {"type": "json_schema", "json_schema": {"name": "bad name!"}}}),
            ),
            "response_format.json_schema.name",
        ),
        (with(json!({"seed": "x"})), "seed"),
        (with(json!({"tools": {}})), "tools"),
        (
            with(json!({"tools": [{"type": "retrieval"}]})),
            "tools[0].type",
        ),
        (
            with(json!({"tools": [{"type": "function", "function": {"name": "has space"}}]})),
            "tools[0].function.name",
        ),
        (
            with(
                json!({"tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]}),
            ),
            "tools[0].function.parameters",
        ),
        (with(json!({"tool_choice": "sometimes"})), "tool_choice"),
        (with(json!({"tool_choice": "required"})), "tool_choice"),
        (
            with(
                json!({"tools": weather_tool(), "tool_choice": {"type": "function", "function": {"name": "other"}}}),
            ),
            "tool_choice.function.name",
        ),
        (
            with(json!({"parallel_tool_calls": 1})),
            "parallel_tool_calls",
        ),
        (with(json!({"stream": "yes"})), "stream"),
        (
            with(json!({"stream_options": {"include_usage": true}})),
            "stream_options",
        ),
        (
            with(json!({"stream": true, "stream_options": {"include_usage": "yes"}})),
            "stream_options.include_usage",
        ),
        (with(json!({"top_k": -2})), "top_k"),
        (with(json!({"min_p": 1.5})), "min_p"),
        (with(json!({"repetition_penalty": 0})), "repetition_penalty"),
        (with(json!({"user": 5})), "user"),
        (with(json!({"reasoning_effort": 3})), "reasoning_effort"),
        (with(json!({"frobnicate": true})), "frobnicate"),
    ];
    for (body, param) in cases {
        let (status, reply) = rig.post(&body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} → {reply}");
        assert_eq!(
            reply["error"]["code"], "invalid_request_error",
            "{body} → {reply}"
        );
        assert_eq!(reply["error"]["type"], "invalid_request_error");
        assert_eq!(reply["error"]["param"], param, "{body} → {reply}");
    }
    // A body that is not JSON at all.
    let r = rig
        .http
        .post(rig.server.url("/v1/chat/completions"))
        .bearer_auth(&rig.tenant.key)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 400);
    assert!(
        rig.fake.requests().is_empty(),
        "nothing invalid reached the upstream"
    );
}

#[tokio::test]
async fn models_and_capabilities_are_checked() {
    let rig = rig().await;
    let cases: Vec<(Value, StatusCode, &str, &str)> = vec![
        (
            hello("no-such-model"),
            StatusCode::NOT_FOUND,
            "model_not_found",
            "model",
        ),
        (
            hello("reel-1"),
            StatusCode::BAD_REQUEST,
            "model_not_chat_capable",
            "model",
        ),
        (
            json!({"model": "text-only", "messages": [{"role": "user", "content": [{"type": "text", "text": "x"},
                {"type": "image_url", "image_url": {"url": "https://example.test/cat.png"}}]}]}),
            StatusCode::BAD_REQUEST,
            "model_capability_mismatch",
            "messages[0].content[1]",
        ),
        (
            json!({"model": "gpt-fake", "messages": [{"role": "user", "content": [
                {"type": "video_url", "video_url": {"url": "https://example.test/clip.mp4"}}]}]}),
            StatusCode::BAD_REQUEST,
            "model_capability_mismatch",
            "messages[0].content[0]",
        ),
        (
            json!({"model": "gpt-fake", "messages": [{"role": "user", "content": [
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]}]}),
            StatusCode::BAD_REQUEST,
            "model_capability_mismatch",
            "messages[0].content[0]",
        ),
        (
            json!({"model": "text-only", "messages": [{"role": "user", "content": "x"}], "tools": weather_tool()}),
            StatusCode::BAD_REQUEST,
            "model_capability_mismatch",
            "tools",
        ),
        (
            json!({"model": "text-only", "messages": [{"role": "user", "content": "x"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}}),
            StatusCode::BAD_REQUEST,
            "model_capability_mismatch",
            "response_format",
        ),
        (
            json!({"model": "gpt-fake", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": "medium"}),
            StatusCode::BAD_REQUEST,
            "unsupported_reasoning_effort",
            "reasoning_effort",
        ),
        (
            json!({"model": "text-only", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": "low"}),
            StatusCode::BAD_REQUEST,
            "unsupported_reasoning_effort",
            "reasoning_effort",
        ),
    ];
    for (body, status, code, param) in cases {
        let (got, reply) = rig.post(&body).await;
        assert_eq!(got, status, "{body} → {reply}");
        assert_eq!(reply["error"]["code"], code, "{body} → {reply}");
        assert_eq!(reply["error"]["param"], param, "{body} → {reply}");
    }
    assert!(rig.fake.requests().is_empty());

    // A listed effort passes and reaches the upstream.
    rig.fake
        .push(Reply::Complete(completion("thought", None, 1, 1)));
    let (status, _) = rig
        .post(&json!({"model": "gpt-fake", "messages": [{"role": "user", "content": "x"}], "reasoning_effort": "high"}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rig.fake.last_request()["reasoning_effort"], "high");
}

#[tokio::test]
async fn zero_balance_is_refused_with_402() {
    let rig = rig_with_credits("0").await;
    let (status, body) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(body["error"]["code"], "insufficient_credits");
    assert!(rig.fake.requests().is_empty());
}

#[tokio::test]
async fn a_charge_may_overdraw_once_then_requests_are_refused() {
    let rig = rig_with_credits("0.00001").await;
    rig.fake
        .push(Reply::Complete(completion("long answer", None, 1000, 1000)));
    let (status, _) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "admitted while the balance is above zero"
    );
    assert_eq!(
        rig.balance().await,
        Decimal::from_str("0.00001").expect("d") - cost(1000, 1000)
    );
    let (status, body) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::PAYMENT_REQUIRED, Some("insufficient_credits"))
    );
}

#[tokio::test]
async fn upstream_failures_map_to_gateway_errors() {
    let rig = rig().await;
    rig.fake.push(Reply::Fail(500, "model crashed"));
    let (status, body) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::BAD_GATEWAY, Some("upstream_error"))
    );
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("model crashed")));

    assert_eq!(
        rig.fake.requests().len(),
        1,
        "an error status is not retried"
    );

    rig.fake.push(Reply::Fail(429, "slow down"));
    let (status, body) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("upstream_unavailable")
        )
    );

    let (status, body) = rig.post(&hello("gpt-down")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("upstream_unavailable")
        )
    );

    rig.fake.push(Reply::Fail(504, "deadline"));
    let (status, body) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::GATEWAY_TIMEOUT, Some("upstream_timeout"))
    );

    // Nothing is charged for a failure.
    assert_eq!(rig.balance().await, Decimal::from_str("10.00").expect("d"));
}

#[tokio::test]
async fn a_stream_the_client_left_is_charged_the_usage_the_upstream_reports() {
    let rig = rig().await;
    let mut chunks: Vec<Value> = (0..20)
        .map(|i| chunk(json!({"content": format!("word{i} ")}), None))
        .collect();
    chunks.push(usage_chunk(50_000, 20));
    rig.fake.push(Reply::Stream {
        chunks,
        gap: Duration::from_millis(100),
    });
    let r = rig
        .http
        .post(rig.server.url("/v1/chat/completions"))
        .bearer_auth(&rig.tenant.key)
        .json(&json!({"model": "gpt-fake", "messages": [{"role": "user", "content": "Count"}], "stream": true}))
        .send()
        .await
        .expect("send");
    let mut body = r.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("word1 ") {
        let piece = body.next().await.expect("more").expect("bytes");
        seen.push_str(&String::from_utf8_lossy(&piece));
    }
    assert_eq!(rig.fake.state.streams_started.load(Ordering::SeqCst), 1);
    drop(body); // the client goes away mid-stream

    // The gateway reads on (at most 30 s) for the usage chunk and charges exactly that.
    let expected = Decimal::from_str("10.00").expect("d") - cost(50_000, 20);
    let deadline = Instant::now() + Duration::from_secs(10);
    while rig.balance().await != expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        rig.balance().await,
        expected,
        "the upstream's usage is charged"
    );
    assert_eq!(rig.available().await, rig.balance().await);
}

// ---------------------------------------------------------------------------------------------
// The official `openai` Python SDK as the client

/// Runs tests/python/test_chat.py (pytest + the `openai` SDK) against a real gateway serving
/// tests/python/catalog.toml, with tests/python/fake_upstream.py as the upstream. Runs only
/// when `REELGATE_PYTHON` names a Python that has `openai` and `pytest` installed; otherwise it
/// says so and passes, except under CI where it fails.
#[tokio::test]
async fn python_sdk_suite() {
    let Some(python) = reelgate_embedded::testing::python_or_skip("python_sdk_suite") else {
        return;
    };
    let rig = reelgate_embedded::testing::PythonRig::start(python).await;
    let funded = rig.server.tenant("10").await;
    let empty = rig.server.tenant("0").await;
    rig.pytest(
        "test_chat.py",
        &[
            ("REELGATE_API_KEY", &funded.key),
            ("REELGATE_EMPTY_API_KEY", &empty.key),
        ],
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Bedrock (Converse / ConverseStream) on the local AWS emulator

#[tokio::test]
async fn a_refused_connection_is_retried_until_the_upstream_listens() {
    // Refused for 150 ms: the adapter's retries (after 100, 200, 400 ms) reach it.
    let fake = FakeUpstream::start_after(Duration::from_millis(150)).await;
    fake.push(Reply::Complete(completion("finally", None, 2, 1)));
    let mut catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    catalog
        .upstreams
        .push(upstream_config("late", &fake.base_url));
    catalog
        .chat_models
        .push(chat_model("gpt-late", "late", &["text"], &[]));
    let server = TestServer::start_with(catalog, |_| {}).await;
    let tenant = server.tenant("1").await;
    let r = reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(&tenant.key)
        .json(&hello("gpt-late"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["choices"][0]["message"]["content"], "finally");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn an_upstream_failing_mid_stream_ends_with_an_error_event_and_is_not_charged() {
    let rig = rig().await;
    rig.fake.push(Reply::Stream {
        chunks: vec![
            chunk(json!({"role": "assistant", "content": "Par"}), None),
            json!({"error": {"message": "the model server crashed", "type": "server_error"}}),
        ],
        gap: Duration::from_millis(5),
    });
    let events = rig
        .stream(&json!({"model": "gpt-fake", "messages": [{"role": "user", "content": "Hi"}], "stream": true}))
        .await;
    let datas: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(datas.len(), 2, "{datas:?}");
    assert!(
        !datas.contains(&"[DONE]"),
        "a failed stream does not claim to be done"
    );
    let error: Value = serde_json::from_str(datas[1]).expect("json");
    assert_eq!(error["error"]["code"], "upstream_error");
    assert!(error["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("crashed")));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(rig.balance().await, Decimal::from_str("10.00").expect("d"));
}

/// With the account cache (Lambda's default) the balance is read while the rate windows are
/// written: a used-up balance is still refused, and the tokens its request reserved are given
/// back, so the window holds only what the admitted requests reserved or used.
#[tokio::test]
async fn with_the_account_cache_a_used_up_balance_is_refused_and_gives_its_tokens_back() {
    let rig = rig_configured("0.00001", |app| {
        app.credentials = Arc::new(reelgate::domain::accounts::AccountCache::new(
            Duration::from_secs(60),
        ));
    })
    .await;
    // The first is admitted (and this process learns the plan); its charge uses the balance up.
    let (status, first) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let used = first["usage"]["total_tokens"].as_u64().expect("usage");
    // The second writes its windows while the balance is read, and is refused.
    let (status, body) = rig.post(&hello("gpt-fake")).await;
    assert_eq!(status, StatusCode::PAYMENT_REQUIRED, "{body}");
    rig.server
        .app
        .accounts()
        .add_credits(&rig.tenant.org, Decimal::from_str("1.00").expect("d"))
        .await
        .expect("credits");
    let r = rig
        .http
        .post(rig.server.url("/v1/chat/completions"))
        .bearer_auth(&rig.tenant.key)
        .json(&hello("gpt-fake"))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let header = |name: &str| -> u64 {
        r.headers()[name]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("number")
    };
    let in_window = header("x-ratelimit-limit-tokens") - header("x-ratelimit-remaining-tokens");
    // The first's usage and the third's reservation (its prompt and the default completion).
    let admitted = used + reelgate::domain::billing::rate_limits::DEFAULT_COMPLETION_ESTIMATE + 64;
    assert!(
        in_window <= admitted,
        "the refused request gave its reservation back: {in_window} tokens in the window, \
         at most {admitted} admitted"
    );
}
