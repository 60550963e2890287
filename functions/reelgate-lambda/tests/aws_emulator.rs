//! The AWS path end to end on the local AWS emulator (ministack, `scripts/aws-emulator.sh`):
//! the table, bucket, render queue with its dead-letter queue and the state machine are created
//! from the definitions the template uses (`reelgate_aws::provision` shapes the table, bucket and
//! queues as the template does; the state machine is `statemachine/video.asl.json` with its
//! placeholders substituted by the emulator's Lambda ARNs); this crate's Lambda bootstraps (the
//! test build's own binaries) are deployed as `provided.al2023` functions; an HTTP API gets the
//! routes the template gives those functions; the render queue triggers the worker through an
//! event source mapping with batch item failures. Then one job goes from `POST /v1/videos`
//! through the real state machine, step functions, worker and the reference engine
//! (`reelgate engine serve`) to `completed`, billed once, one fails in moderation, unbilled, and
//! one is canceled through the deployed cancel function (its execution stopped), unbilled.
//! The console function is deployed behind the same HTTP API (its `ANY /console` and
//! `ANY /console/{proxy+}` routes): a one-time sign-in link gives the session cookie, agreement
//! is recorded through it (with its CSRF token; without, refused), a console upload goes to S3
//! through its presigned PUT; and the console's chat function answers the chat page as SSE
//! through its function URL.
//!
//! Needs `AWS_ENDPOINT_URL` (from `scripts/aws-emulator.sh env`); without it the test fails with
//! a message saying so, unless `REELGATE_SKIP_AWS_TESTS=1`.

use reelgate::domain::accounts::Accounts;
use reelgate::ports::store::{ItemExt, Key};
use reelgate_lambda::functions::{Serves, FUNCTIONS};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The functions this flow reaches.
const DEPLOYED: &[&str] = &[
    "api-videos",
    "api-video-item",
    "api-video-cancel",
    "api-video-content",
    "api-video-acceptance",
    "step-moderate",
    "step-translate",
    "step-stitch",
    "step-finalize",
    "step-fail-job",
    "render-worker",
    // The streaming twin (function URL in RESPONSE_STREAM mode), against a fake upstream.
    "api-chat-completions",
    // The direct-to-S3 upload flow for files over Lambda's 6 MB request limit.
    "api-uploads",
    "api-upload-complete",
    // The console behind the HTTP API (sign-in link, agreement, uploads), and its chat function
    // (`console-chat`, deployed as `console-stream`) for the chat page.
    "console",
];

/// The test build's bootstrap of `binary`, a binary of `src/bin/` (Cargo builds a package's
/// binaries for its tests).
fn bootstrap_path(binary: &str) -> PathBuf {
    let path = match binary {
        "video-admission" => env!("CARGO_BIN_EXE_video-admission"),
        "bucket-routes" => env!("CARGO_BIN_EXE_bucket-routes"),
        "video-cancel" => env!("CARGO_BIN_EXE_video-cancel"),
        "store-routes" => env!("CARGO_BIN_EXE_store-routes"),
        "pipeline" => env!("CARGO_BIN_EXE_pipeline"),
        "chat-routes" => env!("CARGO_BIN_EXE_chat-routes"),
        other => panic!("no bootstrap path for {other}"),
    };
    PathBuf::from(path)
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A Lambda deployment package: the bootstrap as `bootstrap` at the zip's root. Debug info is
/// stripped first (when `strip` exists) so the emulator holds ~20 MB per function, not ~200.
fn package(binary: &str, work: &Path) -> Vec<u8> {
    let dir = work.join(binary);
    std::fs::create_dir_all(&dir).expect("package dir");
    let bootstrap = dir.join("bootstrap");
    std::fs::copy(bootstrap_path(binary), &bootstrap).expect("copy the bootstrap");
    let _ = Command::new("strip")
        .arg("--strip-debug")
        .arg(&bootstrap)
        .status();
    let zip = dir.join("function.zip");
    // Python is there wherever the emulator is (ministack is a Python package).
    let status = Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED, compresslevel=1)\n\
             i = zipfile.ZipInfo('bootstrap'); i.external_attr = 0o755 << 16; i.compress_type = zipfile.ZIP_DEFLATED\n\
             z.writestr(i, open(sys.argv[2], 'rb').read()); z.close()",
        )
        .arg(&zip)
        .arg(&bootstrap)
        .status()
        .expect("python3 to zip the bootstrap");
    assert!(status.success(), "zipping {binary}");
    std::fs::read(&zip).expect("read the zip")
}

/// `(method, path)` of each HttpApi event the template gives `logical_id`.
fn template_routes(template: &serde_yaml::Value, logical_id: &str) -> Vec<(String, String)> {
    let events = &template["Resources"][logical_id]["Properties"]["Events"];
    events
        .as_mapping()
        .map(|m| {
            m.values()
                .filter(|e| e["Type"].as_str() == Some("HttpApi"))
                .map(|e| {
                    let p = &e["Properties"];
                    (
                        p["Method"].as_str().unwrap_or_default().to_uppercase(),
                        p["Path"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The emulator's REST-JSON APIs (Lambda, API Gateway v2), which it serves without signatures.
#[derive(Clone)]
struct Emulator {
    endpoint: String,
    http: reqwest::Client,
}

impl Emulator {
    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.endpoint);
        let response = self
            .http
            .request(method.clone(), &url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "{method} {path}: {status}: {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    async fn create_function(
        &self,
        name: &str,
        zip: &[u8],
        env: &BTreeMap<String, String>,
        timeout: u32,
    ) -> String {
        use base64::Engine as _;
        let body = json!({
            "FunctionName": name,
            "Runtime": "provided.al2023",
            "Handler": "bootstrap",
            "Role": format!("arn:aws:iam::{}:role/reelgate-e2e", account_of_env()),
            "Code": {"ZipFile": base64::engine::general_purpose::STANDARD.encode(zip)},
            "Timeout": timeout,
            "MemorySize": 512,
            "Environment": {"Variables": env},
        });
        let out = self
            .call(reqwest::Method::POST, "/2015-03-31/functions", body)
            .await;
        out["FunctionArn"].as_str().expect("FunctionArn").to_owned()
    }
}

/// The emulator's account (never hard-coded: read back from a resource's ARN or URL).
static ACCOUNT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
fn account_of_env() -> &'static str {
    ACCOUNT.get().map(String::as_str).unwrap_or("000000000000")
}

/// The reference engine as its own process (`reelgate engine serve`), stopped on drop.
struct EngineProcess {
    child: Child,
    url: String,
}

impl Drop for EngineProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_engine() -> EngineProcess {
    // The `reelgate` binary of the same build: target/<profile>/reelgate beside target/<profile>/deps.
    let exe = std::env::current_exe().expect("test exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir");
    let reelgate = profile_dir.join("reelgate");
    assert!(
        reelgate.exists(),
        "{} is missing: build the workspace first (cargo build -p reelgate-cli), as scripts/test.sh does",
        reelgate.display()
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(&reelgate)
        .args(["engine", "serve", "--addr", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start reelgate engine serve");
    let engine = EngineProcess {
        child,
        url: format!("http://{addr}"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "the reference engine did not listen on {addr}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    engine
}

/// A stand-in OpenAI-compatible chat server for the streaming check: lists one model and
/// streams a fixed reply. (A fake, named so: the real upstreams are tested in the core crate.)
struct FakeUpstream {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl FakeUpstream {
    const MODEL: &'static str = "fake-chat-model";

    async fn start() -> FakeUpstream {
        use axum::routing::{get, post};
        async fn models() -> axum::Json<Value> {
            axum::Json(
                json!({"object": "list", "data": [{"id": FakeUpstream::MODEL, "object": "model", "owned_by": "test"}]}),
            )
        }
        async fn completions(axum::Json(body): axum::Json<Value>) -> axum::response::Response {
            use axum::response::IntoResponse;
            let chunk = |delta: Value, finish: Value| {
                json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": FakeUpstream::MODEL,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            let usage = json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8});
            if body["stream"] != true {
                return axum::Json(json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": FakeUpstream::MODEL,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello from the fake upstream"}, "finish_reason": "stop"}],
                    "usage": usage}))
                .into_response();
            }
            let mut events = vec![chunk(
                json!({"role": "assistant", "content": ""}),
                Value::Null,
            )];
            for piece in ["Hello", " from", " the", " fake", " upstream"] {
                events.push(chunk(json!({"content": piece}), Value::Null));
            }
            events.push(chunk(json!({}), json!("stop")));
            events.push(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": FakeUpstream::MODEL,
                               "choices": [], "usage": usage}));
            let mut sse: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
            sse.push_str("data: [DONE]\n\n");
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                sse,
            )
                .into_response()
        }
        let router = axum::Router::new()
            .route("/v1/models", get(models))
            .route("/v1/chat/completions", post(completions));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake upstream");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        FakeUpstream { url, task }
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        (
            status,
            headers,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

/// A console browser session against a deployed console function: the session cookie, and the
/// CSRF token on state-changing requests.
#[derive(Clone)]
struct Console {
    base: String,
    http: reqwest::Client,
    cookie: String,
    csrf: String,
}

impl Console {
    fn without_csrf(&self) -> Console {
        Console {
            csrf: String::new(),
            ..self.clone()
        }
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("cookie", &self.cookie);
        if !self.csrf.is_empty() {
            request = request.header("x-csrf-token", &self.csrf);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        request
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let response = self
            .request(method.clone(), path, body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

fn decimal(v: &str) -> Decimal {
    v.parse().expect("decimal")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_video_job_runs_through_the_deployed_functions_and_state_machine() {
    let Some(endpoint) = std::env::var("AWS_ENDPOINT_URL")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        if std::env::var("REELGATE_SKIP_AWS_TESTS").as_deref() == Ok("1") {
            eprintln!("skipped: REELGATE_SKIP_AWS_TESTS=1 and AWS_ENDPOINT_URL is unset");
            return;
        }
        panic!(
            "AWS_ENDPOINT_URL is unset: start the emulator with `scripts/aws-emulator.sh start` and \
             `eval \"$(scripts/aws-emulator.sh env)\"` (scripts/test.sh does both), or set \
             REELGATE_SKIP_AWS_TESTS=1 to skip the AWS tests"
        );
    };
    let started = Instant::now();
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into());
    let run = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    let names = |what: &str| format!("rg-{run}-{what}");

    // Resources, shaped as the template shapes them.
    let config = reelgate_aws::sdk_config(&region, Some(&endpoint)).await;
    reelgate_aws::provision::table(&config, &names("table"))
        .await
        .expect("table");
    reelgate_aws::provision::bucket(&config, &names("bucket"), true)
        .await
        .expect("bucket");
    let queues = reelgate_aws::provision::queue(&config, &names("render"), 5)
        .await
        .expect("queues");
    let account = queues
        .url
        .trim_end_matches('/')
        .rsplit('/')
        .nth(1)
        .expect("account in the queue URL")
        .to_owned();
    let _ = ACCOUNT.set(account.clone());
    let queue_arn = format!("arn:aws:sqs:{region}:{account}:{}", names("render"));
    let state_machine_name = names("video");
    let state_machine_arn =
        format!("arn:aws:states:{region}:{account}:stateMachine:{state_machine_name}");

    let engine = start_engine();
    let upstream = FakeUpstream::start().await;
    let emulator = Emulator {
        endpoint: endpoint.clone(),
        http: reqwest::Client::new(),
    };

    // The functions, with the template's environment (names instead of !Ref).
    let common: BTreeMap<String, String> = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_REGION", region.as_str()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("REELGATE_TABLE", &names("table")),
        ("REELGATE_BUCKET", &names("bucket")),
        ("REELGATE_RENDER_QUEUE_URL", queues.url.as_str()),
        ("REELGATE_REFERENCE_ENGINE_URL", engine.url.as_str()),
        ("REELGATE_MODERATOR", "rules"),
        ("REELGATE_RENDER_POLL_SECS", "1"),
        ("REELGATE_LOG", "info"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let work = std::env::temp_dir().join(format!("reelgate-lambda-e2e-{run}"));
    // Packaging (strip + zip) and uploading overlap: while the emulator unpacks one function the
    // next one is being zipped. Deploying one by one took ~60 s.
    let mut deploys = tokio::task::JoinSet::new();
    // (deployed name, binary): every binary once, and the console's chat function, whose URL
    // streams.
    let deployments = DEPLOYED
        .iter()
        .map(|b| (*b, *b))
        .chain([("console-stream", "console-chat")]);
    for (deployed, binary) in deployments {
        let mut env = common.clone();
        // A function of a shared bootstrap is told which it is, as the template does.
        let shipped = FUNCTIONS
            .iter()
            .find(|f| f.binary == binary)
            .map_or(binary, reelgate_lambda::functions::bootstrap);
        if shipped != binary {
            env.insert(
                reelgate_lambda::functions::FUNCTION_ENV.into(),
                binary.into(),
            );
        }
        if matches!(deployed, "api-chat-completions" | "console-stream") {
            env.insert(reelgate_lambda::RESPONSE_STREAM_ENV.into(), "1".into());
        }
        if matches!(binary, "api-chat-completions" | "console-chat") {
            env.insert("REELGATE_UPSTREAM_BASE_URL".into(), upstream.url.clone());
        }
        if matches!(binary, "api-videos" | "api-video-cancel" | "render-worker") {
            env.insert(
                "REELGATE_STATE_MACHINE_ARN".into(),
                state_machine_arn.clone(),
            );
        }
        let timeout = if binary.starts_with("api-") || binary.starts_with("console") {
            29
        } else {
            120
        };
        let (emulator, work, name) = (emulator.clone(), work.clone(), names(deployed));
        deploys.spawn(async move {
            // Each deployment packages in a directory of its own.
            let dir = work.join(deployed);
            let zip = tokio::task::spawn_blocking(move || package(shipped, &dir))
                .await
                .expect("packaging");
            (
                deployed,
                emulator.create_function(&name, &zip, &env, timeout).await,
            )
        });
    }
    let mut arns: BTreeMap<&str, String> = BTreeMap::new();
    while let Some(done) = deploys.join_next().await {
        let (binary, arn) = done.expect("deploying a function");
        arns.insert(binary, arn);
    }
    let _ = std::fs::remove_dir_all(&work);
    eprintln!(
        "deployed {} functions in {:.1}s",
        arns.len(),
        started.elapsed().as_secs_f64()
    );

    // The state machine: the ASL file with the template's placeholders pointing at these ARNs.
    let definition_text =
        std::fs::read_to_string(repo().join("statemachine/video.asl.json")).expect("ASL");
    let mut substitutions = BTreeMap::new();
    for f in FUNCTIONS {
        if let Serves::Step { placeholder, .. } = f.serves {
            substitutions.insert(placeholder.to_owned(), arns[f.binary].clone());
        }
    }
    substitutions.insert("RenderQueueUrl".to_owned(), queues.url.clone());
    let definition = reelgate_asl::substitute(&definition_text, &substitutions)
        .expect("every placeholder substituted");
    let sfn = aws_sdk_sfn::Client::new(&config);
    let created = sfn
        .create_state_machine()
        .name(&state_machine_name)
        .definition(definition.to_string())
        .role_arn(format!("arn:aws:iam::{account}:role/reelgate-e2e-states"))
        .r#type(aws_sdk_sfn::types::StateMachineType::Standard)
        .send()
        .await
        .expect("create the state machine");
    assert_eq!(created.state_machine_arn(), state_machine_arn);

    // The worker consumes the render queue, reporting batch item failures (as in the template).
    let mapping = emulator
        .call(
            reqwest::Method::POST,
            "/2015-03-31/event-source-mappings/",
            json!({
                "EventSourceArn": queue_arn,
                "FunctionName": arns["render-worker"],
                "BatchSize": 5,
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "Enabled": true,
            }),
        )
        .await;
    let mapping_id = mapping["UUID"].as_str().unwrap_or_default().to_owned();

    // The HTTP API with the routes the template gives the deployed functions.
    let template: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(repo().join("infra/template.yaml")).expect("template"),
    )
    .expect("template YAML");
    let api = emulator
        .call(
            reqwest::Method::POST,
            "/v2/apis",
            json!({"name": names("api"), "protocolType": "HTTP"}),
        )
        .await;
    let api_id = api["apiId"].as_str().expect("apiId").to_owned();
    emulator
        .call(
            reqwest::Method::POST,
            &format!("/v2/apis/{api_id}/stages"),
            json!({"stageName": "$default", "autoDeploy": true}),
        )
        .await;
    for f in FUNCTIONS.iter().filter(|f| {
        DEPLOYED.contains(&f.binary)
            && matches!(f.serves, Serves::Http { .. } | Serves::Console { .. })
    }) {
        let integration = emulator
            .call(
                reqwest::Method::POST,
                &format!("/v2/apis/{api_id}/integrations"),
                json!({"integrationType": "AWS_PROXY", "integrationUri": arns[f.binary], "payloadFormatVersion": "2.0"}),
            )
            .await;
        let integration_id = integration["integrationId"]
            .as_str()
            .expect("integrationId");
        let routes = template_routes(&template, f.logical_id);
        assert!(
            !routes.is_empty(),
            "{} has no HttpApi event in the template",
            f.logical_id
        );
        for (method, path) in routes {
            emulator
                .call(
                    reqwest::Method::POST,
                    &format!("/v2/apis/{api_id}/routes"),
                    json!({"routeKey": format!("{method} {path}"), "target": format!("integrations/{integration_id}")}),
                )
                .await;
        }
    }
    let api = Api {
        base: format!("{endpoint}/_aws/execute-api/{api_id}/$default"),
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client"),
    };
    eprintln!("resources ready in {:.1}s", started.elapsed().as_secs_f64());

    // An organization with credits, a person and an API key, in the table.
    let backend = reelgate_aws::connect(reelgate_aws::AwsSettings {
        region: region.clone(),
        endpoint_url: Some(endpoint.clone()),
        table: names("table"),
        bucket: names("bucket"),
        queue_url: queues.url.clone(),
        state_machine_arn: Some(state_machine_arn.clone()),
    })
    .await;
    let accounts = Accounts::new(backend.store.as_ref());
    let org = accounts
        .create_org("e2e", "starter", "usd", decimal("10.00"))
        .await
        .expect("org");
    let person = accounts
        .create_person(&org.id, "e2e@reelgate.test")
        .await
        .expect("person");
    let key = accounts
        .create_api_key(&person.id)
        .await
        .expect("key")
        .secret;

    // The deployed acceptance function refuses to record agreement for an API key (only the
    // console records it); agreement is then recorded in the table as the console does.
    let (status, _, body) = api
        .send(reqwest::Method::POST, "/v1/videos/acceptance", &key, None)
        .await;
    assert_eq!(status, 403, "acceptance: {body}");
    assert_eq!(body["error"]["code"], "console_login_required", "{body}");
    // Agreement through the deployed console function, the only path that records it: a
    // one-time sign-in link, redeemed through the HTTP API, gives the session cookie; the CSRF
    // token comes from the session route; a second redemption is refused.
    let link = reelgate::domain::accounts::console::Console::new(backend.store.as_ref())
        .create_link(&person.id, &org.id, 300)
        .await
        .expect("a sign-in link");
    let signin = api
        .http
        .get(format!("{}/console/signin?token={}", api.base, link.token))
        .send()
        .await
        .expect("GET the sign-in link");
    assert_eq!(signin.status().as_u16(), 303, "sign-in");
    let set_cookie = signin
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("Set-Cookie")
        .to_owned();
    assert!(
        set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Lax"),
        "{set_cookie}"
    );
    let cookie = set_cookie
        .split(';')
        .next()
        .expect("the cookie pair")
        .to_owned();
    let again = api
        .http
        .get(format!("{}/console/signin?token={}", api.base, link.token))
        .send()
        .await
        .expect("GET the link again");
    assert_eq!(again.status().as_u16(), 401, "a used link");
    let console = Console {
        base: api.base.clone(),
        http: api.http.clone(),
        cookie,
        csrf: String::new(),
    };
    let (status, session) = console
        .send(reqwest::Method::GET, "/console/api/session", None)
        .await;
    assert_eq!(status, 200, "session: {session}");
    let console = Console {
        csrf: session["csrf_token"]
            .as_str()
            .expect("csrf_token")
            .to_owned(),
        ..console
    };
    let (status, body) = console
        .without_csrf()
        .send(reqwest::Method::POST, "/console/api/terms/agree", None)
        .await;
    assert_eq!(status, 403, "agree without the CSRF token: {body}");
    let (status, agreed) = console
        .send(reqwest::Method::POST, "/console/api/terms/agree", None)
        .await;
    assert_eq!(status, 200, "agree: {agreed}");
    assert_eq!(agreed["accepted"], true, "{agreed}");

    // One job that renders and one that moderation blocks.
    let create = |prompt: &str| json!({"model": "reel-1", "prompt": prompt, "seconds": 4, "aspect_ratio": "16:9"});
    let (status, _, good) = api
        .send(
            reqwest::Method::POST,
            "/v1/videos",
            &key,
            Some(create("A paper boat drifting on a calm lake at dawn")),
        )
        .await;
    assert_eq!(status, 200, "create: {good}");
    assert_eq!(good["status"], "moderating");
    let quote = decimal(good["cost"].as_str().expect("cost"));
    assert_eq!(quote, decimal("0.40"));
    let (status, _, blocked) = api
        .send(
            reqwest::Method::POST,
            "/v1/videos",
            &key,
            Some(create("How to build a bomb, step by step")),
        )
        .await;
    assert_eq!(status, 200, "create: {blocked}");
    let good_id = good["id"].as_str().expect("id").to_owned();
    let blocked_id = blocked["id"].as_str().expect("id").to_owned();

    // Poll both until terminal.
    let deadline = Instant::now() + Duration::from_secs(150);
    let mut finished: BTreeMap<String, Value> = BTreeMap::new();
    while finished.len() < 2 {
        for id in [&good_id, &blocked_id] {
            if finished.contains_key(id) {
                continue;
            }
            let (status, _, video) = api
                .send(
                    reqwest::Method::GET,
                    &format!("/v1/videos/{id}"),
                    &key,
                    None,
                )
                .await;
            assert_eq!(status, 200, "GET {id}: {video}");
            if matches!(
                video["status"].as_str(),
                Some("completed" | "failed" | "canceled")
            ) {
                eprintln!(
                    "{id} {} after {:.1}s",
                    video["status"],
                    started.elapsed().as_secs_f64()
                );
                finished.insert(id.clone(), video);
            }
        }
        if finished.len() < 2 {
            assert!(
                Instant::now() < deadline,
                "jobs did not finish in time: {finished:?}; see the emulator log and the functions' output"
            );
            tokio::time::sleep(Duration::from_millis(1000)).await;
        }
    }
    let good = &finished[&good_id];
    assert_eq!(good["status"], "completed", "{good}");
    assert_eq!(good["thumbnail"], true, "{good}");
    assert_eq!(
        decimal(good["cost"].as_str().unwrap_or_default()),
        quote,
        "the quote stays fixed"
    );
    let blocked = &finished[&blocked_id];
    assert_eq!(blocked["status"], "failed", "{blocked}");
    assert_eq!(blocked["error"]["code"], "moderation_blocked", "{blocked}");

    // Billed once, for the completed job only; nothing is left reserved or in flight.
    let after = accounts.org(&org.id).await.expect("org");
    assert_eq!(after.balance, decimal("10.00") - quote, "{after:?}");
    assert_eq!(after.reserved, Decimal::ZERO, "{after:?}");
    assert_eq!(after.available, decimal("10.00") - quote, "{after:?}");
    assert_eq!(after.renders_in_flight, 0, "{after:?}");
    let charge = |id: &str| Key::new(format!("ORG#{}", org.id), format!("CHARGE#{id}"));
    assert!(
        backend
            .store
            .get(&charge(&good_id))
            .await
            .expect("charge")
            .is_some(),
        "the completed job has its charge"
    );
    assert!(
        backend
            .store
            .get(&charge(&blocked_id))
            .await
            .expect("charge")
            .is_none(),
        "the blocked job is never charged"
    );
    let job = backend
        .store
        .get(&Key::new(
            format!("ORG#{}", org.id),
            format!("VIDEO#{blocked_id}"),
        ))
        .await
        .expect("job")
        .expect("job item");
    assert_eq!(job.str_attr("reservation"), Some("released"));

    // Cancel through the deployed function: a 15-second job canceled while it runs ends
    // `canceled`, its execution is stopped (StopExecution), nothing stays reserved or is charged,
    // and a second cancel is a conflict.
    let (status, _, long) = api
        .send(
            reqwest::Method::POST,
            "/v1/videos",
            &key,
            Some(json!({"model": "reel-1", "prompt": "A long slow pan over a harbour", "seconds": 15, "aspect_ratio": "16:9"})),
        )
        .await;
    assert_eq!(status, 200, "create: {long}");
    let long_id = long["id"].as_str().expect("id").to_owned();
    let (status, _, canceled) = api
        .send(
            reqwest::Method::POST,
            &format!("/v1/videos/{long_id}/cancel"),
            &key,
            None,
        )
        .await;
    assert_eq!(status, 200, "cancel: {canceled}");
    assert_eq!(canceled["status"], "canceled", "{canceled}");
    let execution_arn =
        format!("arn:aws:states:{region}:{account}:execution:{state_machine_name}:{long_id}");
    let stop_deadline = Instant::now() + Duration::from_secs(30);
    let execution_status = loop {
        let described = sfn
            .describe_execution()
            .execution_arn(&execution_arn)
            .send()
            .await
            .expect("describe the canceled job's execution");
        let status = described.status().as_str().to_owned();
        if status != "RUNNING" || Instant::now() > stop_deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(execution_status, "ABORTED");
    let (status, _, again) = api
        .send(
            reqwest::Method::POST,
            &format!("/v1/videos/{long_id}/cancel"),
            &key,
            None,
        )
        .await;
    assert_eq!(status, 409, "cancel again: {again}");
    assert_eq!(again["error"]["code"], "conflict");
    let after_cancel = accounts.org(&org.id).await.expect("org");
    assert_eq!(
        after_cancel.balance,
        decimal("10.00") - quote,
        "{after_cancel:?}"
    );
    assert_eq!(after_cancel.reserved, Decimal::ZERO, "{after_cancel:?}");
    assert_eq!(after_cancel.renders_in_flight, 0, "{after_cancel:?}");
    assert!(
        backend
            .store
            .get(&charge(&long_id))
            .await
            .expect("charge")
            .is_none(),
        "the canceled job is never charged"
    );

    // The executions ended as the state machine says: succeeded, and failed with the code.
    let execution =
        |id: &str| format!("arn:aws:states:{region}:{account}:execution:{state_machine_name}:{id}");
    let ok = sfn
        .describe_execution()
        .execution_arn(execution(&good_id))
        .send()
        .await
        .expect("describe");
    assert_eq!(ok.status(), &aws_sdk_sfn::types::ExecutionStatus::Succeeded);
    let failed = sfn
        .describe_execution()
        .execution_arn(execution(&blocked_id))
        .send()
        .await
        .expect("describe");
    // A failed job ends its execution successfully, with the code in the output: a failed
    // execution would mean the pipeline itself broke.
    assert_eq!(
        failed.status(),
        &aws_sdk_sfn::types::ExecutionStatus::Succeeded
    );
    assert!(
        failed
            .output()
            .is_some_and(|o| o.contains("moderation_blocked")),
        "{:?}",
        failed.output()
    );

    // Content on Lambda: a redirect to a presigned S3 URL that serves the MP4.
    let (status, headers, body) = api
        .send(
            reqwest::Method::GET,
            &format!("/v1/videos/{good_id}/content"),
            &key,
            None,
        )
        .await;
    assert_eq!(status, 302, "content: {body}");
    let location = headers
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("Location")
        .to_owned();
    assert!(
        location.contains("X-Amz-Signature="),
        "a presigned URL: {location}"
    );
    let mp4 = reqwest::get(&location)
        .await
        .expect("GET the presigned URL");
    assert_eq!(mp4.status().as_u16(), 200);
    let bytes = mp4.bytes().await.expect("MP4 bytes");
    assert!(
        bytes.len() > 1000 && &bytes[4..8] == b"ftyp",
        "an MP4 ({} bytes)",
        bytes.len()
    );
    let (status, _, body) = api
        .send(
            reqwest::Method::GET,
            &format!("/v1/videos/{blocked_id}/content"),
            &key,
            None,
        )
        .await;
    assert_eq!(status, 400, "content of a failed job: {body}");

    // Chat streamed through the function URL of the streaming twin (RESPONSE_STREAM): the
    // binary answers in Lambda's streaming framing and the URL turns it into an SSE response.
    let url_config = emulator
        .call(
            reqwest::Method::POST,
            &format!(
                "/2021-10-31/functions/{}/url",
                names("api-chat-completions")
            ),
            json!({"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"}),
        )
        .await;
    let function_url = url_config["FunctionUrl"].as_str().expect("FunctionUrl");
    let url_id = function_url
        .split("://")
        .nth(1)
        .and_then(|h| h.split('.').next())
        .expect("URL id");
    let chat = reqwest::Client::new()
        .post(format!(
            "{endpoint}/_aws/lambda-url/{url_id}/v1/chat/completions"
        ))
        .bearer_auth(&key)
        .json(&json!({
            "model": FakeUpstream::MODEL,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "Say hello"}],
        }))
        .send()
        .await
        .expect("POST the function URL");
    assert_eq!(chat.status().as_u16(), 200);
    let content_type = chat
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "content-type {content_type}"
    );
    let sse = chat.text().await.expect("the SSE body");
    let events: Vec<&str> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"), "{sse}");
    let chunks: Vec<Value> = events
        .iter()
        .filter_map(|e| serde_json::from_str(e).ok())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello from the fake upstream", "{sse}");
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk"),
        "{sse}"
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["usage"]["total_tokens"].as_u64().is_some_and(|t| t > 0)),
        "usage chunk: {sse}"
    );

    // A file larger than a Lambda request can carry: presigned PUT straight to S3, then
    // registered by the complete route (the thumbnail JPEG, padded past 6 MB).
    let thumbnail = reelgate::ports::blobs::read_all(
        backend.blobs.as_ref(),
        &reelgate::domain::videos::thumbnail_blob_key(&org.id, &good_id),
    )
    .await
    .expect("the thumbnail blob");
    let mut large = thumbnail.to_vec();
    large.resize(7 * 1024 * 1024, 0);
    let (status, _, upload) = api
        .send(
            reqwest::Method::POST,
            "/v1/uploads",
            &key,
            Some(json!({"purpose": "vision", "filename": "frame.jpg", "bytes": large.len(), "mime_type": "image/jpeg"})),
        )
        .await;
    assert_eq!(status, 200, "create an upload: {upload}");
    let upload_url = upload["upload_url"].as_str().expect("upload_url");
    let mut put = reqwest::Client::new().put(upload_url).body(large.clone());
    for (name, value) in upload["upload_headers"].as_object().into_iter().flatten() {
        put = put.header(name.as_str(), value.as_str().unwrap_or_default());
    }
    let put = put.send().await.expect("PUT to the presigned URL");
    assert!(put.status().is_success(), "PUT: {}", put.status());
    let upload_id = upload["id"].as_str().expect("upload id");
    let (status, _, file) = api
        .send(
            reqwest::Method::POST,
            &format!("/v1/uploads/{upload_id}/complete"),
            &key,
            None,
        )
        .await;
    assert_eq!(status, 200, "complete: {file}");
    assert_eq!(file["bytes"].as_u64(), Some(large.len() as u64), "{file}");
    assert_eq!(file["purpose"], "vision", "{file}");

    // The console's chat through the console's streaming twin (RESPONSE_STREAM function URL),
    // with the session cookie and CSRF token, as the distribution routes it.
    let url_config = emulator
        .call(
            reqwest::Method::POST,
            &format!("/2021-10-31/functions/{}/url", names("console-stream")),
            json!({"AuthType": "NONE", "InvokeMode": "RESPONSE_STREAM"}),
        )
        .await;
    let function_url = url_config["FunctionUrl"].as_str().expect("FunctionUrl");
    let url_id = function_url
        .split("://")
        .nth(1)
        .and_then(|h| h.split('.').next())
        .expect("URL id");
    let streamed = Console {
        base: format!("{endpoint}/_aws/lambda-url/{url_id}"),
        ..console.clone()
    };
    let chat_body = json!({
        "model": FakeUpstream::MODEL,
        "stream": true,
        "messages": [{"role": "user", "content": "Say hello"}],
    });
    let (status, refused) = streamed
        .without_csrf()
        .send(
            reqwest::Method::POST,
            "/console/api/chat/completions",
            Some(chat_body.clone()),
        )
        .await;
    assert_eq!(
        status, 403,
        "console chat without the CSRF token: {refused}"
    );
    let chat = streamed
        .request(
            reqwest::Method::POST,
            "/console/api/chat/completions",
            Some(chat_body),
        )
        .send()
        .await
        .expect("POST the console's function URL");
    assert_eq!(chat.status().as_u16(), 200);
    let content_type = chat
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "content-type {content_type}"
    );
    let sse = chat.text().await.expect("the SSE body");
    let text: String = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|e| serde_json::from_str::<Value>(e).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "Hello from the fake upstream", "{sse}");
    assert!(sse.trim_end().ends_with("data: [DONE]"), "{sse}");

    // A console upload (the New video page's first frame): the console function presigns the S3
    // PUT, the bytes go straight to the bucket, and completing registers the organization's file.
    let frame = thumbnail.to_vec();
    let (status, upload) = console
        .send(
            reqwest::Method::POST,
            "/console/api/uploads",
            Some(json!({"purpose": "vision", "filename": "first.jpg", "bytes": frame.len(), "mime_type": "image/jpeg"})),
        )
        .await;
    assert_eq!(status, 200, "console upload: {upload}");
    let upload_url = upload["upload_url"].as_str().expect("upload_url");
    assert!(upload_url.contains("X-Amz-Signature="), "{upload_url}");
    let mut put = reqwest::Client::new().put(upload_url).body(frame.clone());
    for (name, value) in upload["upload_headers"].as_object().into_iter().flatten() {
        put = put.header(name.as_str(), value.as_str().unwrap_or_default());
    }
    let put = put.send().await.expect("PUT to the presigned URL");
    assert!(put.status().is_success(), "PUT: {}", put.status());
    let (status, file) = console
        .send(
            reqwest::Method::POST,
            &format!(
                "/console/api/uploads/{}/complete",
                upload["id"].as_str().expect("upload id")
            ),
            None,
        )
        .await;
    assert_eq!(status, 200, "console complete: {file}");
    assert_eq!(file["purpose"], "vision", "{file}");
    assert_eq!(file["bytes"].as_u64(), Some(frame.len() as u64), "{file}");
    // The organization's file: its blob holds the uploaded bytes.
    let stored = reelgate::ports::blobs::read_all(
        backend.blobs.as_ref(),
        &reelgate::domain::files::blob_key(&org.id, file["id"].as_str().expect("file id")),
    )
    .await
    .expect("the file's blob");
    assert_eq!(stored.as_ref(), frame.as_slice());

    // Nothing reached the dead-letter queue.
    assert_eq!(
        backend
            .queue
            .dead_letter_count()
            .await
            .expect("dead letters"),
        0
    );

    if !mapping_id.is_empty() {
        let url = format!("{endpoint}/2015-03-31/event-source-mappings/{mapping_id}");
        let _ = emulator.http.delete(url).send().await;
    }
    // The emulator keeps a warm process per function; free them (best effort).
    for deployed in arns.keys() {
        let url = format!("{endpoint}/2015-03-31/functions/{}", names(deployed));
        let _ = emulator.http.delete(url).send().await;
    }
    eprintln!("the AWS path took {:.1}s", started.elapsed().as_secs_f64());
    drop(engine);
    drop(upstream);
}
