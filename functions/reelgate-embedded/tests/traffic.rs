//! Traffic control end to end on a real server: a chat model served by several deployments
//! (fake providers: real HTTP servers inside the test speaking the OpenAI chat protocol), with
//! fallback, cool-down and `Retry-After`; and rate limits per key answering 429
//! `rate_limit_exceeded` with OpenAI's headers.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures::StreamExt;
use reelgate::domain::catalog::{
    Catalog, ChatModel, Deployment, RateLimits, UpstreamConfig, DEFAULT_CATALOG,
};
use reelgate_embedded::testing::{Tenant, TestServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How a fake provider answers every chat request.
#[derive(Clone, Copy)]
enum Behaviour {
    /// A completion (or, streamed, three chunks) naming the provider.
    Answer,
    /// 429 with `Retry-After: 60`.
    RateLimited,
    /// 500.
    Broken,
    /// Streams one chunk, then drops the connection mid-stream.
    BreaksAfterFirstChunk,
}

struct FakeProvider {
    name: &'static str,
    base_url: String,
    requests: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct FakeState {
    name: &'static str,
    behaviour: Behaviour,
    requests: Arc<AtomicUsize>,
}

impl FakeProvider {
    async fn start(name: &'static str, behaviour: Behaviour) -> FakeProvider {
        let requests = Arc::new(AtomicUsize::new(0));
        let state = FakeState {
            name,
            behaviour,
            requests: requests.clone(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(fake_chat))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeProvider {
            name,
            base_url,
            requests,
            task,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn chunk(text: &str) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "x",
           "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
}

async fn fake_chat(State(state): State<FakeState>, Json(body): Json<Value>) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let stream = body["stream"].as_bool().unwrap_or(false);
    match state.behaviour {
        Behaviour::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "60")],
            Json(json!({"error": {"message": "slow down", "type": "rate_limit", "code": null}})),
        )
            .into_response(),
        Behaviour::Broken => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "boom", "type": "server_error", "code": null}})),
        )
            .into_response(),
        Behaviour::Answer if !stream => Json(json!({
            "id": "x", "object": "chat.completion", "created": 1, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": format!("from {}", state.name)}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        }))
        .into_response(),
        Behaviour::Answer => {
            let events: Vec<Result<String, std::io::Error>> = vec![
                Ok(format!("data: {}\n\n", chunk("from "))),
                Ok(format!("data: {}\n\n", chunk(state.name))),
                Ok("data: [DONE]\n\n".into()),
            ];
            sse(futures::stream::iter(events).boxed())
        }
        Behaviour::BreaksAfterFirstChunk => {
            let first = futures::stream::once(async {
                Ok::<_, std::io::Error>(format!("data: {}\n\n", chunk("partial ")))
            });
            let broken = futures::stream::once(async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(std::io::Error::other("the provider fell over"))
            });
            sse(first.chain(broken).boxed())
        }
    }
}

fn sse(events: futures::stream::BoxStream<'static, Result<String, std::io::Error>>) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(events))
        .unwrap_or_default()
}

fn upstream(id: &str, base_url: &str) -> UpstreamConfig {
    UpstreamConfig {
        id: id.into(),
        kind: "openai".into(),
        base_url: Some(base_url.into()),
        api_key_env: None,
        region: None,
        extra_headers: Default::default(),
    }
}

/// A server whose model `routed` is served by `providers` with the given weights.
async fn server_with(providers: &[(&FakeProvider, u32)]) -> TestServer {
    let mut catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    let mut deployments = Vec::new();
    for (p, weight) in providers {
        catalog.upstreams.push(upstream(p.name, &p.base_url));
        deployments.push(Deployment {
            upstream: p.name.into(),
            upstream_model: Some(format!("{}-model", p.name)),
            weight: *weight,
            capabilities: None,
            reasoning_efforts: None,
        });
    }
    let mut model: ChatModel =
        serde_json::from_value(json!({"id": "routed", "upstream": ""})).expect("model");
    model.deployments = deployments;
    catalog.chat_models.push(model);
    TestServer::start_with(catalog, |_| {}).await
}

async fn chat(server: &TestServer, tenant: &Tenant, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(&tenant.key)
        .json(&body)
        .send()
        .await
        .expect("request")
}

#[tokio::test]
async fn a_rate_limited_deployment_is_cooled_down_and_every_request_succeeds() {
    let busy = FakeProvider::start("busy", Behaviour::RateLimited).await;
    let good = FakeProvider::start("good", Behaviour::Answer).await;
    let server = server_with(&[(&busy, 1), (&good, 1)]).await;
    let tenant = server.tenant("10.00").await;
    for i in 0..30 {
        let stream = i % 3 == 0;
        let r = chat(
            &server,
            &tenant,
            json!({"model": "routed", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
        assert_eq!(r.status(), 200, "request {i}");
        let text = r.text().await.expect("body");
        assert!(text.contains("good"), "request {i}: {text}");
    }
    // After its first 429 (Retry-After: 60) the busy deployment is out: at most one try.
    assert!(
        busy.requests() <= 1,
        "busy got {} requests",
        busy.requests()
    );
    assert_eq!(good.requests(), 30);
}

#[tokio::test]
async fn a_failing_deployment_falls_through_to_the_next_and_all_failing_is_unavailable() {
    let broken = FakeProvider::start("broken", Behaviour::Broken).await;
    let spare = FakeProvider::start("spare", Behaviour::Answer).await;
    let server = server_with(&[(&broken, 1), (&spare, 0)]).await;
    let tenant = server.tenant("10.00").await;
    let body = json!({"model": "routed", "messages": [{"role": "user", "content": "hi"}]});
    for _ in 0..5 {
        let r = chat(&server, &tenant, body.clone()).await;
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["choices"][0]["message"]["content"], "from spare");
        assert_eq!(
            v["model"], "routed",
            "the caller sees the model it asked for"
        );
    }
    // Three failures in a row took `broken` out: requests 4 and 5 went straight to the spare.
    assert_eq!(broken.requests(), 3);
    assert_eq!(spare.requests(), 5);

    let also_broken = FakeProvider::start("also", Behaviour::Broken).await;
    let broken2 = FakeProvider::start("broken2", Behaviour::Broken).await;
    let server = server_with(&[(&broken2, 1), (&also_broken, 1)]).await;
    let tenant = server.tenant("10.00").await;
    let r = chat(&server, &tenant, body).await;
    assert_eq!(r.status(), 503);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "upstream_unavailable", "{v}");
    assert_eq!(broken2.requests() + also_broken.requests(), 2);
}

#[tokio::test]
async fn a_stream_that_fails_after_its_first_chunk_is_not_retried() {
    let flaky = FakeProvider::start("flaky", Behaviour::BreaksAfterFirstChunk).await;
    let spare = FakeProvider::start("spare", Behaviour::Answer).await;
    let server = server_with(&[(&flaky, 1), (&spare, 0)]).await;
    let tenant = server.tenant("10.00").await;
    let r = chat(
        &server,
        &tenant,
        json!({"model": "routed", "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap_or_default();
    assert!(text.contains("partial"), "{text}");
    assert!(!text.contains("spare"), "the stream was switched: {text}");
    assert_eq!(spare.requests(), 0);
    assert_eq!(flaky.requests(), 1);
}

#[tokio::test]
async fn a_keys_limit_answers_429_with_openais_headers() {
    let good = FakeProvider::start("good", Behaviour::Answer).await;
    let server = server_with(&[(&good, 1)]).await;
    let tenant = server.tenant("10.00").await;
    stay_inside_one_minute().await;
    limit_key(
        &server,
        &tenant,
        RateLimits {
            requests_per_minute: Some(3),
            tokens_per_minute: Some(5000),
            video_creates_per_minute: None,
        },
    )
    .await;
    let body = json!({"model": "routed", "max_completion_tokens": 100,
                      "messages": [{"role": "user", "content": "hi"}]});
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let r = chat(&server, &tenant, body.clone()).await;
        assert_eq!(r.status(), 200);
        let h = r.headers();
        assert_eq!(h["x-ratelimit-limit-requests"], "3");
        assert_eq!(h["x-ratelimit-limit-tokens"], "5000");
        assert!(h["x-ratelimit-reset-requests"]
            .to_str()
            .expect("ascii")
            .ends_with('s'));
        remaining.push(
            h["x-ratelimit-remaining-requests"]
                .to_str()
                .expect("ascii")
                .to_owned(),
        );
    }
    assert_eq!(remaining, ["2", "1", "0"]);
    let r = chat(&server, &tenant, body.clone()).await;
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry));
    assert_eq!(r.headers()["x-ratelimit-remaining-requests"], "0");
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "rate_limit_exceeded", "{v}");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    // Another key of the same organization has its own allowance.
    let other = server.member(&tenant.org).await;
    assert_eq!(chat(&server, &other, body).await.status(), 200);
    assert_eq!(
        good.requests(),
        4,
        "the refused request never reached a provider"
    );
}

#[tokio::test]
async fn tokens_per_minute_reserve_the_maximum_and_settle_with_the_real_count() {
    let good = FakeProvider::start("good", Behaviour::Answer).await;
    let server = server_with(&[(&good, 1)]).await;
    let tenant = server.tenant("10.00").await;
    stay_inside_one_minute().await;
    limit_key(
        &server,
        &tenant,
        RateLimits {
            tokens_per_minute: Some(1000),
            ..Default::default()
        },
    )
    .await;
    // Each request reserves its prompt estimate + 600 and uses 8 (the fake's usage): after
    // settling, the window holds 8 per request, so many fit although two reservations would not.
    let body = json!({"model": "routed", "max_completion_tokens": 600,
                      "messages": [{"role": "user", "content": "hi"}]});
    let mut first_left = None;
    for i in 0..5u64 {
        let r = chat(&server, &tenant, body.clone()).await;
        assert_eq!(r.status(), 200, "request {i}");
        let left: u64 = r.headers()["x-ratelimit-remaining-tokens"]
            .to_str()
            .expect("ascii")
            .parse()
            .expect("n");
        let first = *first_left.get_or_insert(left);
        assert!(
            first < 400,
            "the reservation includes the 600 maximum: {first}"
        );
        assert_eq!(left, first - 8 * i, "request {i}");
    }
    // One request larger than the whole allowance is refused outright.
    let huge = json!({"model": "routed", "max_completion_tokens": 5000,
                      "messages": [{"role": "user", "content": "hi"}]});
    let r = chat(&server, &tenant, huge).await;
    assert_eq!(r.status(), 429);
    let v: Value = r.json().await.expect("json");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("tokens per minute"));
}

/// Waits for the next minute when less than 10 s of this one are left, so a test's requests
/// share one rate-limit window.
async fn stay_inside_one_minute() {
    let into_minute = reelgate::ports::store::now_secs().rem_euclid(60);
    if into_minute > 50 {
        tokio::time::sleep(Duration::from_secs((61 - into_minute) as u64)).await;
    }
}

/// Sets the tenant's key's own limits.
async fn limit_key(server: &TestServer, tenant: &Tenant, limits: RateLimits) {
    let key = keys_of(server, tenant).await;
    server
        .app
        .accounts()
        .set_key_limits(&key, &limits)
        .await
        .expect("limits");
}

/// The id of the tenant's (only) API key.
async fn keys_of(server: &TestServer, tenant: &Tenant) -> String {
    let keys = server
        .app
        .accounts()
        .list_api_keys(&tenant.org, &tenant.person)
        .await
        .expect("keys");
    keys.first().expect("a key").id.clone()
}

#[tokio::test]
async fn video_creates_per_minute_are_limited_per_key() {
    let server = TestServer::start().await;
    let tenant = server.tenant("100.00").await;
    reelgate_embedded::testing::agree(&server.app, &tenant.org, &tenant.person).await;
    stay_inside_one_minute().await;
    limit_key(
        &server,
        &tenant,
        RateLimits {
            video_creates_per_minute: Some(1),
            ..Default::default()
        },
    )
    .await;
    let create = || async {
        reqwest::Client::new()
            .post(server.url("/v1/videos"))
            .bearer_auth(&tenant.key)
            .json(&json!({"model": "reel-1", "prompt": "waves", "seconds": 4, "aspect_ratio": "16:9"}))
            .send()
            .await
            .expect("request")
    };
    let first = create().await;
    assert!(first.status().is_success(), "{}", first.status());
    assert_eq!(first.headers()["x-ratelimit-remaining-requests"], "0");
    let second = create().await;
    assert_eq!(second.status(), 429);
    let v: Value = second.json().await.expect("json");
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    let org = server.app.accounts().org(&tenant.org).await.expect("org");
    assert_eq!(
        org.renders_in_flight, 1,
        "the refused create reserved nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keys_monthly_budget_is_never_overshot_by_renders_and_refuses_text_once_reached() {
    let good = FakeProvider::start("good", Behaviour::Answer).await;
    let mut catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    catalog.upstreams.push(upstream("good", &good.base_url));
    let mut model: ChatModel =
        serde_json::from_value(json!({"id": "priced", "upstream": "good"})).expect("model");
    // 0.10 a token: the fake's 5 + 3 tokens cost 0.80.
    model.input_per_million = "100000".parse().expect("d");
    model.output_per_million = "100000".parse().expect("d");
    catalog.chat_models.push(model);
    let server = TestServer::start_with(catalog, |_| {}).await;
    let accounts = server.app.accounts();
    // Enterprise: 32 renders may run at once, so only the budget binds.
    let org = accounts
        .create_org("budgeted", "enterprise", "usd", "100".parse().expect("d"))
        .await
        .expect("org");
    let tenant = server.member(&org.id).await;
    reelgate_embedded::testing::agree(&server.app, &tenant.org, &tenant.person).await;
    let key = keys_of(&server, &tenant).await;
    accounts
        .set_key_budget(&key, Some("1.00".parse().expect("d")))
        .await
        .expect("budget");

    // Ten concurrent 4-second renders at 0.40: exactly two fit in 1.00.
    let client = reqwest::Client::new();
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (client, url, secret) = (client.clone(), server.url("/v1/videos"), tenant.key.clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(secret)
                .json(&json!({"model": "reel-1", "prompt": "waves", "seconds": 4, "aspect_ratio": "16:9"}))
                .send()
                .await
                .expect("request");
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.expect("json"))
        }));
    }
    let mut admitted = Vec::new();
    for t in tasks {
        let (status, v) = t.await.expect("join");
        if status == 200 {
            admitted.push(v["id"].as_str().expect("id").to_owned());
        } else {
            assert_eq!(status, 402, "{v}");
            assert_eq!(v["error"]["code"], "key_budget_exceeded", "{v}");
        }
    }
    assert_eq!(admitted.len(), 2);
    let holder = accounts.api_key_holder(&key).await.expect("key");
    assert_eq!(
        holder.budget.expect("budget").committed,
        "0.80".parse().expect("d")
    );

    // A render that ends unbilled gives its quote back to the month.
    let cx = server.app.context();
    assert!(
        reelgate::domain::videos::jobs::cancel(cx, &tenant.org, &admitted[0])
            .await
            .expect("cancel")
    );
    let holder = accounts.api_key_holder(&key).await.expect("key");
    assert_eq!(
        holder.budget.expect("budget").committed,
        "0.40".parse().expect("d")
    );

    // Text: admitted while below the budget, charged into it, refused once it is reached.
    let body = json!({"model": "priced", "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(chat(&server, &tenant, body.clone()).await.status(), 200); // 0.40 → 1.20
    let r = chat(&server, &tenant, body.clone()).await;
    assert_eq!(r.status(), 402);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "key_budget_exceeded");
    let holder = accounts.api_key_holder(&key).await.expect("key");
    let committed = holder.budget.expect("budget").committed;
    // The overshoot is at most the one request that was in flight when the budget was reached.
    assert_eq!(committed, "1.20".parse().expect("d"));
    // Another key of the organization has no budget and is unaffected.
    let other = server.member(&tenant.org).await;
    assert_eq!(chat(&server, &other, body).await.status(), 200);
}

/// The console's write of a holder's own key controls is conditional on the key record itself:
/// another person's key (same organization) or a key revoked in the meantime is not written,
/// even when the caller skips the ownership read before it.
#[tokio::test]
async fn a_holders_key_controls_write_only_their_own_unrevoked_key() {
    let server = TestServer::start().await;
    let ana = server.tenant("10").await;
    let bo = server.member(&ana.org).await;
    let accounts = server.app.accounts();
    let ana_key = keys_of(&server, &ana).await;
    let bo_key = keys_of(&server, &bo).await;
    let two = RateLimits {
        requests_per_minute: Some(2),
        ..RateLimits::default()
    };
    let budget = Some("5.00".parse().expect("decimal"));
    let err = accounts
        .set_own_key_controls(&ana.org, &ana.person, &bo_key, &two, budget)
        .await
        .expect_err("another person's key");
    assert_eq!(err.code, "api_key_not_found");
    let untouched = accounts.api_key_holder(&bo_key).await.expect("holder");
    assert_eq!(untouched.limits, RateLimits::default());
    assert!(untouched.budget.is_none());

    let set = accounts
        .set_own_key_controls(&ana.org, &ana.person, &ana_key, &two, budget)
        .await
        .expect("own key");
    assert_eq!(set.limits.requests_per_minute, Some(2));
    assert_eq!(
        set.budget.expect("budget").monthly,
        "5.00".parse().expect("d")
    );

    accounts.revoke_api_key(&ana_key).await.expect("revoke");
    let err = accounts
        .set_own_key_controls(
            &ana.org,
            &ana.person,
            &ana_key,
            &RateLimits::default(),
            None,
        )
        .await
        .expect_err("revoked key");
    assert_eq!(err.code, "api_key_not_found");
    let kept = accounts.api_key_holder(&ana_key).await.expect("holder");
    assert_eq!(
        kept.limits.requests_per_minute,
        Some(2),
        "the revoked key was not written"
    );
}
