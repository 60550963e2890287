//! Every function is assembled with every port its routes use (issue #16: a function links only
//! the AWS adapters of the ports its manifest entry declares, `reelgate_lambda::ports`).
//!
//! The whole local service runs (embedded store, blobs, queues, the state machine on the embedded
//! runner, the reference engine behind a fake that can hold a render, a fake chat upstream).
//! Then, for each HTTP function, its own routes are served over a copy of that App in which only
//! the ports its entry declares work: every other port is `reelgate_lambda::ports::Absent`, as
//! in the function's binary. Each method of its path is driven with a representative valid
//! request over existing objects (a file, an image, an upload with its bytes, a completed video,
//! a video whose render is running, a stored response, a webhook endpoint), and must succeed
//! without touching an absent port (even one whose error a handler would swallow). Deletes run
//! last, after every function has read the objects. A port missing from an entry fails here.

mod support;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use reelgate::app::App;
use reelgate::domain::catalog::providers::Engines;
use reelgate::domain::catalog::Catalog;
use reelgate::domain::chat::upstreams::Upstreams;
use reelgate::ports::engine::{EngineError, Render, RenderRequest, RenderStatus, VideoEngine};
use reelgate::ports::upstream::{ChatUpstream, ChunkStream, UpstreamError};
use reelgate_embedded::testing::{agree, Tenant, TestServer};
use reelgate_lambda::functions::{LambdaFunction, Serves, FUNCTIONS};
use reelgate_lambda::ports::{absent_calls, Absent, Adapters, Port, UrlsOnly};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::matches_template;
use tower::ServiceExt;

const CHAT_CATALOG: &str = r#"
[[upstreams]]
id = "fake"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[[chat_models]]
id = "fake-chat"
upstream = "fake"
capabilities = ["text", "vision"]
input_per_million = "1000"
output_per_million = "2000"
"#;

/// A 1×1 PNG.
const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A fake chat upstream (named so): one fixed answer, plain or streamed.
struct FakeChat;

#[async_trait::async_trait]
impl ChatUpstream for FakeChat {
    async fn complete(
        &self,
        request: reelgate::ports::upstream::ChatCompletionRequest,
    ) -> Result<reelgate::ports::upstream::Completion, UpstreamError> {
        let request = request.to_json();
        reelgate::ports::upstream::Completion::from_json(
            json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
            "model": request["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello."},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}),
        )
    }
    async fn stream(
        &self,
        request: reelgate::ports::upstream::ChatCompletionRequest,
    ) -> Result<ChunkStream, UpstreamError> {
        let request = request.to_json();
        let chunk = |delta: Value, finish: Option<&str>| {
            json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": request["model"],
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let mut tail = chunk(json!({}), Some("stop"));
        tail["usage"] = json!({"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7});
        let chunks = vec![
            Ok(chunk(
                json!({"role": "assistant", "content": "Hello."}),
                None,
            )),
            Ok(tail),
        ];
        let chunks: Vec<_> = chunks
            .into_iter()
            .map(|c| c.and_then(reelgate::ports::upstream::CompletionChunk::from_json))
            .collect();
        Ok(Box::pin(futures::stream::iter(chunks)))
    }
}

/// The reference engine behind a fake (named so) that keeps the renders of prompts containing
/// `HOLD` rendering, so a running job can be canceled.
struct FakeHoldingEngine {
    inner: Arc<dyn VideoEngine>,
    held: Mutex<HashSet<String>>,
}

impl FakeHoldingEngine {
    fn held(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or_default()
    }
}

#[async_trait::async_trait]
impl VideoEngine for FakeHoldingEngine {
    async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineError> {
        let render = self.inner.submit(request).await?;
        if request.prompt.contains("HOLD") {
            self.held.lock().expect("lock").insert(render.id.clone());
        }
        Ok(render)
    }
    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        let mut render = self.inner.status(render_id).await?;
        if self.held.lock().expect("lock").contains(render_id) {
            render.status = RenderStatus::Rendering;
            render.progress = 10;
        }
        Ok(render)
    }
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        self.held.lock().expect("lock").remove(render_id);
        self.inner.cancel(render_id).await
    }
    async fn fetch_result(
        &self,
        render: &Render,
    ) -> Result<reelgate::ports::engine::ByteStream, EngineError> {
        self.inner.fetch_result(render).await
    }
}

/// `full` as `function`'s binary assembles it: its declared ports as they are, every other one
/// absent (the chat upstreams and video engines of every kind, as in the binary, which links no
/// upstream or engine adapter it does not declare).
fn assembled(full: &App, function: &LambdaFunction) -> App {
    let mut app = full.clone();
    let declared = function.adapters;
    let absent = |port| Absent::new(port, function.binary);
    if declared.declares(Port::BlobUrls) {
        app.blobs = Arc::new(UrlsOnly::new(full.blobs.clone(), absent(Port::Blobs)));
    } else if !declared.declares(Port::Blobs) {
        app.blobs = Arc::new(absent(Port::Blobs));
    }
    if !declared.declares(Port::Queues) {
        app.render_queue = Arc::new(absent(Port::Queues));
        app.webhooks = Some(Arc::new(absent(Port::Queues)));
    }
    if !declared.declares(Port::Workflow) {
        app = app.with_workflow(Arc::new(absent(Port::Workflow)));
    }
    if !declared.declares(Port::Chat) {
        app.upstreams = Arc::new(Upstreams::with_connector(Arc::new(absent(Port::Chat))));
        app.translator = None;
    }
    if !declared.declares(Port::VideoEngines) {
        let engines = Engines::default();
        for e in &app.catalog.engines {
            engines.insert(&e.id, Arc::new(absent(Port::VideoEngines)));
        }
        app.engines = Arc::new(engines);
    }
    if !declared.declares(Port::Pdf) {
        app.pdf = Arc::new(absent(Port::Pdf));
    }
    if !declared.declares(Port::Moderation) {
        app.moderator = Arc::new(absent(Port::Moderation));
    }
    app
}

/// One request of the full service (seeding), which must succeed.
async fn seed(server: &TestServer, t: &Tenant, method: &str, path: &str, body: Value) -> Value {
    let http = reqwest::Client::new();
    let req = match method {
        "POST" => http.post(server.url(path)).json(&body),
        _ => http.get(server.url(path)),
    };
    let res = req.bearer_auth(&t.key).send().await.expect("request");
    let status = res.status();
    let v: Value = res.json().await.expect("json");
    assert!(status.is_success(), "seeding {method} {path}: {status} {v}");
    v
}

/// An upload of `png` whose bytes were PUT to its presigned URL, ready to complete.
async fn uploaded(server: &TestServer, t: &Tenant, png: &[u8]) -> String {
    let upload = seed(
        server,
        t,
        "POST",
        "/v1/uploads",
        json!({"purpose": "vision", "filename": "dot.png", "bytes": png.len(), "mime_type": "image/png"}),
    )
    .await;
    let put = reqwest::Client::new()
        .put(upload["upload_url"].as_str().expect("upload url"))
        .header("content-type", "image/png")
        .body(png.to_vec())
        .send()
        .await
        .expect("put");
    assert!(put.status().is_success(), "{}", put.status());
    upload["id"].as_str().expect("upload id").to_owned()
}

async fn wait_video(server: &TestServer, t: &Tenant, id: &str, until: &str) {
    let start = Instant::now();
    loop {
        let v = seed(server, t, "GET", &format!("/v1/videos/{id}"), Value::Null).await;
        if v["status"] == until {
            return;
        }
        assert!(
            !["failed", "canceled", "completed"].contains(&v["status"].as_str().unwrap_or("")),
            "{id} ended without reaching {until}: {v}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "{id} stuck: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A multipart body of one file upload.
fn multipart(purpose: &str, filename: &str, mime: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "reelgate-test-boundary";
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{boundary}\r\ncontent-disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n\
             --{boundary}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
             content-type: {mime}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// A request to drive: method, path, body (JSON or multipart).
enum Payload {
    None,
    Json(Value),
    Multipart(String, Vec<u8>),
}

struct Call {
    method: &'static str,
    path: String,
    payload: Payload,
    /// The answer expected when it is not a success.
    refusal: Option<(u16, &'static str)>,
}

fn call(method: &'static str, path: impl Into<String>) -> Call {
    Call {
        method,
        path: path.into(),
        payload: Payload::None,
        refusal: None,
    }
}

fn call_json(method: &'static str, path: impl Into<String>, body: Value) -> Call {
    Call {
        method,
        path: path.into(),
        payload: Payload::Json(body),
        refusal: None,
    }
}

/// Who calls: an API key for the API's functions, a console session (its cookie, with the CSRF
/// token every state-changing console request carries) for the console's.
struct Credentials {
    key: String,
    console_cookie: String,
    csrf: String,
}

async fn drive(
    app: &App,
    function: &LambdaFunction,
    who: &Credentials,
    c: &Call,
) -> (StatusCode, String) {
    let (routes, console) = match function.serves {
        Serves::Http { routes, .. } => (routes, false),
        Serves::Console { routes, .. } | Serves::ConsoleChat { routes } => (routes, true),
        _ => panic!("{} is not an HTTP function", function.binary),
    };
    let router = reelgate::api::serve(app.clone(), routes());
    let builder = Request::builder().method(c.method).uri(&c.path);
    let builder = if console {
        builder
            .header("cookie", &who.console_cookie)
            .header(reelgate::api::console::CSRF_HEADER, &who.csrf)
    } else {
        builder.header("authorization", format!("Bearer {}", who.key))
    };
    let request = match &c.payload {
        Payload::None => builder.body(Body::empty()),
        Payload::Json(v) => builder
            .header("content-type", "application/json")
            .body(Body::from(v.to_string())),
        Payload::Multipart(ct, bytes) => builder
            .header("content-type", ct)
            .body(Body::from(bytes.clone())),
    }
    .expect("request");
    let response = router.oneshot(request).await.expect("answer");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
        .await
        .expect("body");
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_route_of_every_function_runs_on_the_ports_it_declares() {
    let catalog = Catalog::parse(&format!(
        "{}\n{CHAT_CATALOG}",
        reelgate::domain::catalog::DEFAULT_CATALOG
    ))
    .expect("catalog");
    let server = TestServer::start_full(0.05, move |app| {
        app.catalog = Arc::new(catalog);
        app.upstreams.insert("fake", Arc::new(FakeChat));
        // The webhook endpoints of this test listen on 127.0.0.1.
        let mut settings = (*app.settings).clone();
        settings.allow_private_file_urls = true;
        app.fetcher = Arc::new(reelgate::app::guarded_fetcher(&settings));
        app.settings = Arc::new(settings);
    })
    .await;
    let reference = server
        .app
        .engines
        .get("reference")
        .expect("reference engine");
    let engine = Arc::new(FakeHoldingEngine {
        inner: reference,
        held: Mutex::new(HashSet::new()),
    });
    server.app.engines.insert("reference", engine.clone());
    let t = server.tenant("1000.00").await;
    // The held render, the first-frame job, a remix and an extension may run at once.
    server
        .app
        .accounts()
        .set_plan(&t.org, "enterprise")
        .await
        .expect("plan");
    agree(&server.app, &t.org, &t.person).await;

    // The objects the routes read, made through the whole service.
    use base64::Engine as _;
    let png = base64::engine::general_purpose::STANDARD
        .decode(PNG_BASE64)
        .expect("png");
    let (ct, body) = multipart("vision", "dot.png", "image/png", &png);
    let image: Value = reqwest::Client::new()
        .post(server.url("/v1/files"))
        .bearer_auth(&t.key)
        .header("content-type", ct)
        .body(body)
        .send()
        .await
        .expect("upload")
        .json()
        .await
        .expect("json");
    let image = image["id"].as_str().expect("file id").to_owned();
    let upload = uploaded(&server, &t, &png).await;
    let hook = server.url("/hook");
    let webhook = seed(&server, &t, "POST", "/v1/webhooks", json!({"url": hook})).await;
    let webhook = webhook["id"].as_str().expect("webhook id").to_owned();
    let video = json!({"model": "reel-1", "prompt": "a calm lake at dawn", "seconds": 4, "aspect_ratio": "1:1"});
    let done = seed(&server, &t, "POST", "/v1/videos", video.clone()).await;
    let done = done["id"].as_str().expect("video id").to_owned();
    wait_video(&server, &t, &done, "completed").await;
    let stored = seed(
        &server,
        &t,
        "POST",
        "/v1/responses",
        json!({"model": "fake-chat", "store": true, "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "What is in the image?"},
            {"type": "input_image", "file_id": image}]}]}),
    )
    .await;
    let stored = stored["id"].as_str().expect("response id").to_owned();
    let character = json!({"name": "Dot", "file_id": image});
    let seeded = seed(
        &server,
        &t,
        "POST",
        "/v1/videos/characters",
        character.clone(),
    )
    .await;
    let seeded = seeded["id"].as_str().expect("character id").to_owned();

    // The console's objects: a session (its cookie and CSRF token, from a one-time sign-in
    // link), a second completed video, key, upload and webhook for the console's own deletes.
    let login = server.console_sign_in(&t.person, &t.org).await;
    let who = Credentials {
        key: t.key.clone(),
        console_cookie: login.cookie,
        csrf: login.csrf,
    };
    let console_seed = |path: &str, body: Value| {
        let (server, who) = (&server, &who);
        let path = path.to_owned();
        async move {
            let res = reqwest::Client::new()
                .post(server.url(&path))
                .header("cookie", &who.console_cookie)
                .header(reelgate::api::console::CSRF_HEADER, &who.csrf)
                .json(&body)
                .send()
                .await
                .expect("console request");
            let status = res.status();
            let v: Value = res.json().await.expect("json");
            assert!(status.is_success(), "seeding POST {path}: {status} {v}");
            v
        }
    };
    let done2 = seed(&server, &t, "POST", "/v1/videos", video.clone()).await;
    let done2 = done2["id"].as_str().expect("video id").to_owned();
    wait_video(&server, &t, &done2, "completed").await;
    let key2 = console_seed("/console/api/keys", json!({"name": "second"})).await;
    let key2 = key2["id"].as_str().expect("key id").to_owned();
    let webhook2 = seed(&server, &t, "POST", "/v1/webhooks", json!({"url": hook})).await;
    let webhook2 = webhook2["id"].as_str().expect("webhook id").to_owned();
    let upload2 = uploaded(&server, &t, &png).await;

    let chat = json!({"model": "fake-chat", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is in the image?"},
        {"type": "image_url", "image_url": {"file_id": image}}]}]});
    let mut streamed_chat = chat.clone();
    streamed_chat["stream"] = json!(true);
    let held_prompt = json!({"model": "reel-1", "prompt": "HOLD a calm lake at dusk", "seconds": 4, "aspect_ratio": "1:1"});
    let (ct, body) = multipart("user_data", "notes.txt", "text/plain", b"some notes");
    // Per HTTP function: the calls of its path, in order (each path's methods from API_ROUTES).
    let calls = |binary: &str| -> Vec<Call> {
        match binary {
            "api-files" => vec![
                Call {
                    method: "POST",
                    path: "/v1/files".into(),
                    payload: Payload::Multipart(ct.clone(), body.clone()),
                    refusal: None,
                },
                call("GET", "/v1/files"),
            ],
            "api-file-item" => vec![
                call("GET", format!("/v1/files/{image}")),
                call("DELETE", format!("/v1/files/{image}")),
            ],
            "api-file-content" => vec![call("GET", format!("/v1/files/{image}/content"))],
            "api-uploads" => vec![call_json(
                "POST",
                "/v1/uploads",
                json!({"purpose": "user_data", "filename": "a.txt", "bytes": 10, "mime_type": "text/plain"}),
            )],
            "api-upload-complete" => vec![call_json(
                "POST",
                format!("/v1/uploads/{upload}/complete"),
                json!({}),
            )],
            "api-videos" => vec![
                call_json("POST", "/v1/videos", held_prompt.clone()),
                call_json(
                    "POST",
                    "/v1/videos",
                    // A create naming a character copies its frames into the job's folder.
                    json!({"model": "reel-1", "prompt": "the dot grows",
                    "seconds": 4, "aspect_ratio": "1:1",
                    "image_reference": [{"file_id": image, "role": "first_frame"}],
                    "characters": [seeded]}),
                ),
                call("GET", "/v1/videos"),
            ],
            "api-video-models" => vec![call("GET", "/v1/videos/models")],
            "api-video-acceptance" => vec![
                call("GET", "/v1/videos/acceptance"),
                // Agreement is recorded only with a console session; an API key's POST is
                // refused after its authentication (the path's handler runs).
                Call {
                    refusal: Some((403, "console_login_required")),
                    ..call("POST", "/v1/videos/acceptance")
                },
            ],
            "api-video-item" => vec![
                call("GET", format!("/v1/videos/{done}")),
                call("DELETE", format!("/v1/videos/{done}")),
            ],
            "api-video-content" => vec![call("GET", format!("/v1/videos/{done}/content"))],
            "api-video-thumbnail" => vec![call("GET", format!("/v1/videos/{done}/thumbnail"))],
            // The video `api-videos` admitted (its render held running): see below.
            "api-video-cancel" => vec![call("POST", "/v1/videos/{held}/cancel")],
            "api-video-characters" => vec![
                call_json("POST", "/v1/videos/characters", character.clone()),
                call("GET", "/v1/videos/characters"),
            ],
            "api-video-character-item" => vec![
                call("GET", format!("/v1/videos/characters/{seeded}")),
                call("DELETE", format!("/v1/videos/characters/{seeded}")),
            ],
            "api-video-edits" => vec![call_json(
                "POST",
                "/v1/videos/edits",
                json!({"prompt": "the lake in snow", "video": {"id": done}}),
            )],
            "api-video-extensions" => vec![call_json(
                "POST",
                "/v1/videos/extensions",
                json!({"prompt": "the lake at noon", "seconds": 4, "video": {"id": done}}),
            )],
            "api-video-remix" => vec![call_json(
                "POST",
                format!("/v1/videos/{done}/remix"),
                json!({"prompt": "the same dot, now blue"}),
            )],
            "api-webhooks" => vec![
                call_json("POST", "/v1/webhooks", json!({"url": hook})),
                call("GET", "/v1/webhooks"),
            ],
            "api-webhook-item" => vec![
                call("GET", format!("/v1/webhooks/{webhook}")),
                call("DELETE", format!("/v1/webhooks/{webhook}")),
            ],
            "api-webhook-rotate-secret" => vec![call(
                "POST",
                format!("/v1/webhooks/{webhook}/rotate_secret"),
            )],
            "api-usage" => vec![call("GET", "/v1/usage?start_time=0")],
            "api-models" => vec![call("GET", "/v1/models")],
            "api-model-item" => vec![call("GET", "/v1/models/fake-chat")],
            "api-openapi" => vec![call("GET", "/openapi.json")],
            "api-chat-completions" => vec![
                call_json("POST", "/v1/chat/completions", chat.clone()),
                call_json("POST", "/v1/chat/completions", streamed_chat.clone()),
            ],
            "api-messages" => vec![
                call_json(
                    "POST",
                    "/v1/messages",
                    json!({"model": "fake-chat", "max_tokens": 20,
                           "messages": [{"role": "user", "content": "hi"}]}),
                ),
                call_json(
                    "POST",
                    "/v1/messages",
                    json!({"model": "fake-chat", "max_tokens": 20, "stream": true,
                           "messages": [{"role": "user", "content": "hi"}]}),
                ),
            ],
            "api-messages-count-tokens" => vec![call_json(
                "POST",
                "/v1/messages/count_tokens",
                json!({"model": "fake-chat", "messages": [{"role": "user", "content": "hi"}]}),
            )],
            "api-responses" => vec![call_json(
                "POST",
                "/v1/responses",
                json!({"model": "fake-chat", "store": true, "input": [{"role": "user", "content": [
                    {"type": "input_text", "text": "And now?"},
                    {"type": "input_image", "file_id": image}]}]}),
            )],
            "api-response-item" => vec![
                call("GET", format!("/v1/responses/{stored}")),
                call("DELETE", format!("/v1/responses/{stored}")),
            ],
            "api-response-input-items" => {
                vec![call("GET", format!("/v1/responses/{stored}/input_items"))]
            }
            "console" => vec![
                call("GET", "/console"),
                call("GET", "/console/"),
                call("GET", format!("/console/videos/{done}")),
                call("GET", "/console/assets/console.css"),
                call("GET", "/console/assets/console.js"),
                // Without a link's token the sign-in page answers that the link is not valid.
                Call {
                    refusal: Some((401, "")),
                    ..call("GET", "/console/signin")
                },
                // No identity provider is configured here: each OIDC route says so after
                // routing (the handler runs).
                Call {
                    refusal: Some((404, "")),
                    ..call("GET", "/console/oidc/start")
                },
                Call {
                    refusal: Some((404, "")),
                    ..call("GET", "/console/oidc/callback")
                },
                Call {
                    refusal: Some((404, "")),
                    ..call_json("POST", "/console/oidc/choose", json!({}))
                },
                call("GET", "/console/api/session"),
                call("GET", "/console/api/terms"),
                call("POST", "/console/api/terms/agree"),
                call("GET", "/console/api/models"),
                call("GET", "/console/api/chat/models"),
                call("GET", "/console/api/keys"),
                call_json("POST", "/console/api/keys", json!({"name": "third"})),
                call("GET", format!("/console/api/keys/{key2}/limits")),
                call_json(
                    "POST",
                    format!("/console/api/keys/{key2}/limits"),
                    json!({"requests_per_minute": 100}),
                ),
                call("DELETE", format!("/console/api/keys/{key2}")),
                call("GET", "/console/api/usage"),
                call_json(
                    "POST",
                    "/console/api/uploads",
                    json!({"purpose": "vision", "filename": "a.png", "bytes": 10, "mime_type": "image/png"}),
                ),
                call_json(
                    "POST",
                    format!("/console/api/uploads/{upload2}/complete"),
                    json!({}),
                ),
                call("GET", "/console/api/webhooks"),
                call_json("POST", "/console/api/webhooks", json!({"url": hook})),
                call(
                    "POST",
                    format!("/console/api/webhooks/{webhook2}/rotate_secret"),
                ),
                call("POST", format!("/console/api/webhooks/{webhook2}/test")),
                call("DELETE", format!("/console/api/webhooks/{webhook2}")),
                // Signing out ends the session the console's other calls use: the last call.
                call("POST", "/console/api/signout"),
            ],
            "console-videos" => vec![
                call_json("POST", "/console/api/videos/quote", video.clone()),
                call_json("POST", "/console/api/videos", held_prompt.clone()),
                call("GET", "/console/api/videos"),
                call("GET", format!("/console/api/videos/{done}")),
                call("GET", format!("/console/api/videos/{done}/media")),
                call_json(
                    "POST",
                    format!("/console/api/videos/{done}/remix"),
                    json!({"prompt": "the same dot, now red"}),
                ),
                call_json(
                    "POST",
                    format!("/console/api/videos/{done}/extend"),
                    json!({"prompt": "the lake at dusk", "seconds": 4}),
                ),
                call_json(
                    "POST",
                    format!("/console/api/videos/{done}/edit"),
                    json!({"prompt": "the lake in fog"}),
                ),
                call("DELETE", format!("/console/api/videos/{done2}")),
            ],
            // The video console-videos admitted (its render held running).
            "console-video-cancel" => vec![call("POST", "/console/api/videos/{held}/cancel")],
            "console-chat" => vec![
                call_json("POST", "/console/api/chat/completions", chat.clone()),
                call_json(
                    "POST",
                    "/console/api/chat/completions",
                    streamed_chat.clone(),
                ),
            ],
            other => panic!("no representative requests for {other}: add them to this test"),
        }
    };

    // The API's functions, then the console's (whose site function signs out last).
    let http: Vec<&LambdaFunction> = FUNCTIONS
        .iter()
        .filter(|f| matches!(f.serves, Serves::Http { .. }))
        .chain(
            FUNCTIONS
                .iter()
                .filter(|f| {
                    matches!(
                        f.serves,
                        Serves::Console { .. } | Serves::ConsoleChat { .. }
                    )
                })
                .filter(|f| f.binary != "console"),
        )
        .chain(FUNCTIONS.iter().filter(|f| f.binary == "console"))
        .collect();
    let mut failures = Vec::new();
    let mut held: Option<String> = None;
    // Two passes: everything but the deletes (and the console's sign-out), then those.
    for deletes in [false, true] {
        for function in &http {
            let app = assembled(&server.app, function);
            let calls = calls(function.binary);
            for (method, path) in routes_of(function) {
                assert!(
                    calls
                        .iter()
                        .any(|c| c.method == method && matches_template(path, &c.path)),
                    "{}: no representative {method} {path} in this test",
                    function.binary
                );
            }
            for mut c in calls {
                let ends_something = c.method == "DELETE" || c.path.ends_with("/signout");
                if ends_something != deletes {
                    continue;
                }
                if c.path.contains("{held}") {
                    let id = held
                        .clone()
                        .expect("api-videos runs before api-video-cancel");
                    // Cancel while the render runs (the engine holds it).
                    let start = Instant::now();
                    while engine.held() == 0 {
                        assert!(start.elapsed() < Duration::from_secs(120), "no held render");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    c.path = c.path.replace("{held}", &id);
                }
                let before = absent_calls().len();
                let (status, body) = drive(&app, function, &who, &c).await;
                let absent: Vec<_> = absent_calls().split_off(before);
                let expected = match c.refusal {
                    None => status.is_success(),
                    Some((code, error)) => status.as_u16() == code && body.contains(error),
                };
                if !expected || !absent.is_empty() {
                    failures.push(format!(
                        "{} {} {}: {status}, absent ports called: {absent:?}; {}",
                        function.binary,
                        c.method,
                        c.path,
                        body.chars().take(600).collect::<String>()
                    ));
                }
                let holds = matches!(&c.payload, Payload::Json(v)
                    if v["prompt"].as_str().is_some_and(|p| p.starts_with("HOLD")));
                if holds && status.is_success() {
                    let v: Value = serde_json::from_str(&body).expect("video json");
                    held = v["id"].as_str().map(str::to_owned);
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "functions assembled without a port their routes use (or a request failed):\n{}",
        failures.join("\n")
    );
}

/// The functions that serve no HTTP routes (the workflow steps, the workers and the
/// reconciler) run with every port: the pipeline reaches every port but the PDF renderer, which
/// only the responses path invokes.
/// The PDF renderer function itself reads and writes the bucket and nothing else.
#[test]
fn every_other_function_declares_every_port() {
    for f in FUNCTIONS {
        if matches!(f.serves, Serves::PdfRasterizer) {
            assert_eq!(f.adapters.ports(), vec![Port::Blobs], "{}", f.binary);
            continue;
        }
        if f.serves.http_routes().is_some() {
            continue;
        }
        assert_eq!(
            f.adapters.ports(),
            Adapters::ALL.ports(),
            "{} must declare every port",
            f.binary
        );
    }
}

/// The (method, path template) routes a function answers: its API path's methods, or the
/// console routes that reach it on AWS.
fn routes_of(function: &LambdaFunction) -> Vec<(&'static str, &'static str)> {
    match function.serves {
        Serves::Http { path, .. } => reelgate::api::API_ROUTES
            .iter()
            .filter(|(_, p)| *p == path)
            .copied()
            .collect(),
        _ => reelgate::api::CONSOLE_ROUTES
            .iter()
            .filter(|(m, p)| {
                reelgate_lambda::functions::for_console_route(m, p)
                    .is_some_and(|f| f.binary == function.binary)
            })
            .copied()
            .collect(),
    }
}
