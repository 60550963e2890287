use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use image::{Rgb, RgbImage};
use reelgate_engine::{
    serve_on, EngineClient, EngineClientError, EngineConfig, FaultSwitches, ReferenceEngine,
    Render, RenderInputs, RenderRequest, RenderSource, RenderStatus, HANG_PROGRESS,
};
use reelgate_media::{decode_image, probe_mp4, render_mp4, thumbnail_jpeg, RenderSpec};

struct Engine {
    engine: Arc<ReferenceEngine>,
    base: String,
    client: EngineClient,
}

async fn start_engine(configure: impl FnOnce(&mut EngineConfig)) -> Engine {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let mut config = EngineConfig {
        public_base_url: base.clone(),
        max_parallel: 2,
        fault_injection: true,
        ..EngineConfig::default()
    };
    configure(&mut config);
    let api_key = config.api_key.clone();
    let engine = ReferenceEngine::new(config);
    tokio::spawn(serve_on(listener, engine.clone()));
    let client = EngineClient::new(base.clone(), api_key).expect("client");
    Engine {
        engine,
        base,
        client,
    }
}

/// A stand-in for the service: serves input files and records callbacks.
struct Fixtures {
    base: String,
    callbacks: Arc<Mutex<Vec<Render>>>,
}

fn png(img: &RgbImage) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img.clone())
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("png");
    out.into_inner()
}

async fn start_fixtures() -> Fixtures {
    let red = png(&RgbImage::from_pixel(1366, 768, Rgb([230, 20, 20])));
    let short_clip = render_mp4(
        &RenderSpec::new(64, 64, 1, "short"),
        &mut |_| {},
        &AtomicBool::new(false),
    )
    .expect("clip");
    let mut green_spec = RenderSpec::new(320, 180, 2, "a green field");
    green_spec.first_frame = Some(RgbImage::from_pixel(320, 180, Rgb([20, 200, 40])));
    let green_clip = render_mp4(&green_spec, &mut |_| {}, &AtomicBool::new(false)).expect("clip");
    let callbacks: Arc<Mutex<Vec<Render>>> = Arc::default();
    let app = Router::new()
        .route("/green.mp4", get(move || async move { ([(header::CONTENT_TYPE, "video/mp4")], green_clip) }))
        .route("/red.png", get(move || async move { ([(header::CONTENT_TYPE, "image/png")], red) }))
        .route("/short.mp4", get(move || async move { ([(header::CONTENT_TYPE, "video/mp4")], short_clip) }))
        .route("/text.png", get(|| async { "this is not a picture" }))
        .route("/gone.png", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/callback",
            post(|State(store): State<Arc<Mutex<Vec<Render>>>>, Json(render): Json<Render>| async move {
                store.lock().expect("lock").push(render);
                StatusCode::NO_CONTENT
            }),
        )
        .with_state(callbacks.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Fixtures { base, callbacks }
}

fn request(seconds: u32, aspect: &str, (width, height): (u32, u32)) -> RenderRequest {
    RenderRequest {
        model: "reelgate-reference".into(),
        prompt: "a paper boat drifting down a rainy street".into(),
        seconds,
        aspect_ratio: aspect.into(),
        width,
        height,
        inputs: RenderInputs::default(),
        callback_url: None,
        // Unique per request: a repeated reference is an idempotent resubmission.
        client_reference: Some(format!(
            "test-{}",
            NEXT_REFERENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        )),
    }
}

static NEXT_REFERENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

async fn wait_for(client: &EngineClient, id: &str, done: impl Fn(&Render) -> bool) -> Render {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let render = client.get(id).await.expect("get");
        if done(&render) {
            return render;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting, last state {render:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn wait_terminal(client: &EngineClient, id: &str) -> Render {
    wait_for(client, id, |r| r.status.is_terminal()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_poll_download_probe() {
    let e = start_engine(|_| {}).await;
    let accepted = e
        .client
        .submit(&request(4, "16:9", (1366, 768)))
        .await
        .expect("submit");
    assert!(
        accepted.id.starts_with("rnd_") && accepted.id.len() == 28,
        "{}",
        accepted.id
    );
    assert!(matches!(
        accepted.status,
        RenderStatus::Queued | RenderStatus::Rendering
    ));
    assert!(accepted.created_at > 1_700_000_000);
    let done = wait_terminal(&e.client, &accepted.id).await;
    assert_eq!(done.status, RenderStatus::Succeeded, "{done:?}");
    assert_eq!(done.progress, 100);
    let url = done.result_url.expect("result_url");
    assert_eq!(url, format!("{}/v1/renders/{}/result", e.base, done.id));
    let mp4 = e.client.download_result(&url).await.expect("download");
    let probe = probe_mp4(&mp4).expect("probe");
    let video = probe.video.expect("video");
    assert_eq!((video.width, video.height), (1366, 768));
    let audio = probe.audio.expect("audio");
    assert_eq!(audio.codec, "aac");
    assert!((audio.duration_secs - 4.0).abs() < 0.05 && (video.duration_secs - 4.0).abs() < 0.05);

    // Unknown ids and results before success are rejected with protocol errors.
    match e.client.get("rnd_000000000000000000000000").await {
        Err(EngineClientError::Rejected {
            status: 404, code, ..
        }) => assert_eq!(code, "render_not_found"),
        other => panic!("expected 404, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_render() {
    let e = start_engine(|c| c.max_parallel = 1).await;
    let accepted = e
        .client
        .submit(&request(15, "16:9", (1366, 768)))
        .await
        .expect("submit");
    let canceled = e.client.cancel(&accepted.id).await.expect("cancel");
    assert_eq!(canceled.status, RenderStatus::Canceled);
    // Idempotent, and it stays canceled.
    assert_eq!(
        e.client.cancel(&accepted.id).await.expect("again").status,
        RenderStatus::Canceled
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later = e.client.get(&accepted.id).await.expect("get");
    assert_eq!(later.status, RenderStatus::Canceled);
    assert!(later.result_url.is_none());
    let result = e
        .client
        .download_result(&format!("{}/v1/renders/{}/result", e.base, accepted.id))
        .await;
    match result {
        Err(EngineClientError::Rejected {
            status: 409, code, ..
        }) => assert_eq!(code, "render_not_ready"),
        other => panic!("expected 409, got {other:?}"),
    }
    // The slot was freed: a new render completes.
    let next = e
        .client
        .submit(&request(1, "1:1", (768, 768)))
        .await
        .expect("submit");
    assert_eq!(
        wait_terminal(&e.client, &next.id).await.status,
        RenderStatus::Succeeded
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_fail_and_hang() {
    let e = start_engine(|_| {}).await;
    e.engine.set_faults(FaultSwitches {
        fail: true,
        ..Default::default()
    });
    let failed = e
        .client
        .submit(&request(2, "16:9", (1366, 768)))
        .await
        .expect("submit");
    let failed = wait_terminal(&e.client, &failed.id).await;
    assert_eq!(failed.status, RenderStatus::Failed);
    assert_eq!(failed.error.expect("error").code, "engine_failure");

    e.engine.set_faults(FaultSwitches {
        hang: true,
        ..Default::default()
    });
    let hung = e
        .client
        .submit(&request(2, "16:9", (1366, 768)))
        .await
        .expect("submit");
    let state = wait_for(&e.client, &hung.id, |r| r.status == RenderStatus::Rendering).await;
    assert_eq!(state.progress, HANG_PROGRESS);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let state = e.client.get(&hung.id).await.expect("get");
    assert_eq!(
        (state.status, state.progress),
        (RenderStatus::Rendering, HANG_PROGRESS)
    );
    assert_eq!(
        e.client.cancel(&hung.id).await.expect("cancel").status,
        RenderStatus::Canceled
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_bad_output_and_drop_connection() {
    let e = start_engine(|_| {}).await;
    e.engine.set_faults(FaultSwitches {
        bad_output: true,
        ..Default::default()
    });
    let bad = e
        .client
        .submit(&request(1, "16:9", (1366, 768)))
        .await
        .expect("submit");
    let bad = wait_terminal(&e.client, &bad.id).await;
    assert_eq!(bad.status, RenderStatus::Succeeded);
    let mp4 = e
        .client
        .download_result(bad.result_url.as_deref().expect("url"))
        .await
        .expect("download");
    let video = probe_mp4(&mp4).expect("probe").video.expect("video");
    assert_ne!((video.width, video.height), (1366, 768));

    // Flip drop_connection over HTTP, as a test harness of the service would.
    let http = reqwest::Client::new();
    let put = http
        .put(format!("{}/v1/faults", e.base))
        .json(&FaultSwitches {
            drop_connection: true,
            ..Default::default()
        })
        .send()
        .await
        .expect("put faults");
    assert_eq!(put.status(), 200);
    match e.client.submit(&request(1, "16:9", (1366, 768))).await {
        Err(EngineClientError::Unreachable(msg)) => assert!(!msg.is_empty()),
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(matches!(
        e.client.get(&bad.id).await,
        Err(EngineClientError::Unreachable(_))
    ));
    assert!(matches!(
        e.client.cancel(&bad.id).await,
        Err(EngineClientError::Unreachable(_))
    ));
    let err = e.client.get(&bad.id).await.expect_err("dropped");
    assert!(err.is_retryable());
    // Raw check: no HTTP status line at all comes back.
    let raw = raw_http(&e.base, "GET /v1/renders/x HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(!raw.starts_with("HTTP/"), "got a response: {raw:?}");

    let faults: FaultSwitches = http
        .put(format!("{}/v1/faults", e.base))
        .json(&serde_json::json!({}))
        .send()
        .await
        .expect("put")
        .json()
        .await
        .expect("json");
    assert_eq!(faults, FaultSwitches::default());
    assert_eq!(
        e.client.get(&bad.id).await.expect("get again").status,
        RenderStatus::Succeeded
    );
}

async fn raw_http(base: &str, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_are_delivered() {
    let e = start_engine(|_| {}).await;
    let fx = start_fixtures().await;
    let mut req = request(2, "9:16", (768, 1366));
    req.callback_url = Some(format!("{}/callback", fx.base));
    let accepted = e.client.submit(&req).await.expect("submit");
    assert_eq!(
        wait_terminal(&e.client, &accepted.id).await.status,
        RenderStatus::Succeeded
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = fx.callbacks.lock().expect("lock").clone();
        if seen
            .last()
            .is_some_and(|r| r.status == RenderStatus::Succeeded)
        {
            assert!(seen.iter().all(|r| r.id == accepted.id));
            assert_eq!(seen[0].status, RenderStatus::Queued);
            assert!(seen.iter().any(|r| r.status == RenderStatus::Rendering));
            assert!(
                seen.windows(2).all(|w| w[0].progress <= w[1].progress),
                "{seen:?}"
            );
            // At least every ~5 %: 0 → 100 needs many posts.
            assert!(seen.len() >= 15, "only {} callbacks", seen.len());
            assert!(seen.last().and_then(|r| r.result_url.as_ref()).is_some());
            break;
        }
        assert!(Instant::now() < deadline, "callbacks so far: {seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_frame_is_fetched_and_used() {
    let e = start_engine(|_| {}).await;
    let fx = start_fixtures().await;
    let mut req = request(2, "16:9", (1366, 768));
    req.inputs.first_frame_url = Some(format!("{}/red.png", fx.base));
    let accepted = e.client.submit(&req).await.expect("submit");
    let done = wait_terminal(&e.client, &accepted.id).await;
    assert_eq!(done.status, RenderStatus::Succeeded, "{done:?}");
    let mp4 = e
        .client
        .download_result(done.result_url.as_deref().expect("url"))
        .await
        .expect("download");
    let thumb = decode_image(&thumbnail_jpeg(&mp4, 160).expect("thumb")).expect("jpeg");
    let p = thumb.get_pixel(80, 40).0;
    assert!(
        p[0] > 150 && p[1] < 100 && p[2] < 100,
        "expected the red first frame, got {p:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_video_is_drawn_by_every_operation() {
    let e = start_engine(|_| {}).await;
    let fx = start_fixtures().await;
    for operation in ["remix", "edit", "extension"] {
        let mut req = request(2, "16:9", (1366, 768));
        req.inputs.source = Some(RenderSource {
            operation: operation.into(),
            video_url: format!("{}/green.mp4", fx.base),
            render_id: None,
        });
        let accepted = e.client.submit(&req).await.expect("submit");
        let done = wait_terminal(&e.client, &accepted.id).await;
        assert_eq!(
            done.status,
            RenderStatus::Succeeded,
            "{operation}: {done:?}"
        );
        let mp4 = e
            .client
            .download_result(done.result_url.as_deref().expect("url"))
            .await
            .expect("download");
        // Remix and edit show the source's frames; an extension opens on its last picture.
        let thumb = decode_image(&thumbnail_jpeg(&mp4, 160).expect("thumb")).expect("jpeg");
        let p = thumb.get_pixel(80, 40).0;
        assert!(
            p[1] > 120 && p[0] < 110 && p[2] < 110,
            "{operation}: expected the green source, got {p:?}"
        );
    }
    // A source that is not an H.264 MP4 fails the render; an unknown operation is refused.
    let mut req = request(1, "16:9", (1366, 768));
    req.inputs.source = Some(RenderSource {
        operation: "edit".into(),
        video_url: format!("{}/text.png", fx.base),
        render_id: None,
    });
    let accepted = e.client.submit(&req).await.expect("submit");
    let done = wait_terminal(&e.client, &accepted.id).await;
    assert_eq!(
        done.error.as_ref().map(|e| e.code.as_str()),
        Some("input_invalid"),
        "{done:?}"
    );
    req.inputs.source = Some(RenderSource {
        operation: "teleport".into(),
        video_url: format!("{}/green.mp4", fx.base),
        render_id: None,
    });
    let refused = e.client.submit(&req).await.expect_err("refused");
    assert!(
        refused.to_string().contains("inputs.source.operation"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_and_invalid_inputs_fail_the_render() {
    let e = start_engine(|_| {}).await;
    let fx = start_fixtures().await;
    let cases = [
        (
            RenderInputs {
                first_frame_url: Some(format!("{}/gone.png", fx.base)),
                ..Default::default()
            },
            "input_unreadable",
        ),
        (
            RenderInputs {
                last_frame_url: Some(format!("{}/text.png", fx.base)),
                ..Default::default()
            },
            "input_unreadable",
        ),
        (
            RenderInputs {
                reference_image_urls: vec!["http://127.0.0.1:9/nothing.png".into()],
                ..Default::default()
            },
            "input_unreadable",
        ),
        (
            RenderInputs {
                reference_video_urls: vec![format!("{}/short.mp4", fx.base)],
                ..Default::default()
            },
            "input_invalid",
        ),
    ];
    for (inputs, code) in cases {
        let mut req = request(1, "16:9", (1366, 768));
        req.inputs = inputs.clone();
        let accepted = e.client.submit(&req).await.expect("submit");
        let done = wait_terminal(&e.client, &accepted.id).await;
        assert_eq!(done.status, RenderStatus::Failed, "{inputs:?}");
        assert_eq!(
            done.error.as_ref().map(|e| e.code.as_str()),
            Some(code),
            "{inputs:?}: {done:?}"
        );
    }
}

#[tokio::test]
async fn validation_auth_and_unreachable() {
    let e = start_engine(|c| c.api_key = Some("sekret".into())).await;
    let bad_cases = [
        (request(4, "5:4", (1366, 768)), "aspect_ratio"),
        (request(4, "16:9", (1920, 1080)), "width"),
        (request(0, "16:9", (1366, 768)), "seconds"),
        (
            RenderRequest {
                inputs: RenderInputs {
                    first_frame_url: Some("file:///etc/passwd".into()),
                    ..Default::default()
                },
                ..request(4, "16:9", (1366, 768))
            },
            "inputs.first_frame_url",
        ),
    ];
    let http = reqwest::Client::new();
    for (req, param) in bad_cases {
        let resp = http
            .post(format!("{}/v1/renders", e.base))
            .bearer_auth("sekret")
            .json(&req)
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 400);
        let body: serde_json::Value = resp.json().await.expect("json");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["param"], param);
        assert!(body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    // Auto accepts any of the six sizes.
    let auto = e
        .client
        .submit(&request(1, "Auto", (768, 1024)))
        .await
        .expect("auto");
    e.client.cancel(&auto.id).await.expect("cancel");

    let anonymous = EngineClient::new(e.base.clone(), None).expect("client");
    match anonymous.get(&auto.id).await {
        Err(EngineClientError::Rejected {
            status: 401, code, ..
        }) => assert_eq!(code, "invalid_api_key"),
        other => panic!("expected 401, got {other:?}"),
    }
    let broken = http
        .post(format!("{}/v1/renders", e.base))
        .bearer_auth("sekret")
        .body("{")
        .send()
        .await
        .expect("send");
    assert_eq!(broken.status(), 400);

    // Nothing listens on a freshly closed port.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = closed.local_addr().expect("addr");
    drop(closed);
    let nowhere = EngineClient::new(format!("http://{addr}"), None).expect("client");
    assert!(matches!(
        nowhere.get("rnd_1").await,
        Err(EngineClientError::Unreachable(_))
    ));
}

#[tokio::test]
async fn router_nests_under_a_prefix() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/engine", listener.local_addr().expect("addr"));
    let engine = ReferenceEngine::new(EngineConfig {
        public_base_url: base.clone(),
        ..EngineConfig::default()
    });
    let app = Router::new().nest("/engine", engine.router());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let client = EngineClient::new(base, None).expect("client");
    let accepted = client
        .submit(&request(1, "4:3", (1024, 768)))
        .await
        .expect("submit");
    assert_eq!(client.get(&accepted.id).await.expect("get").id, accepted.id);
    client.cancel(&accepted.id).await.expect("cancel");
    // Fault injection is off by default: the route does not exist.
    let resp = reqwest::Client::new()
        .put(format!("{}/v1/faults", client.base_url))
        .json(&FaultSwitches::default())
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_idempotency_key_finds_the_first_render() {
    let e = start_engine(|c| c.max_parallel = 1).await;
    let mut job = request(4, "16:9", (1366, 768));
    job.client_reference = Some("video_redelivered".into());
    // The client sends client_reference as the Idempotency-Key header.
    let first = e.client.submit(&job).await.expect("submit");
    let again = e.client.submit(&job).await.expect("resubmit");
    assert_eq!(
        again.id, first.id,
        "a redelivered submission starts no second render"
    );
    // Concurrent redeliveries too.
    let mut other = request(4, "16:9", (1366, 768));
    other.client_reference = Some("video_raced".into());
    let (a, b) = tokio::join!(e.client.submit(&other), e.client.submit(&other));
    assert_eq!(a.expect("a").id, b.expect("b").id);
    // Without a key each submission is its own render.
    let mut plain = request(4, "16:9", (1366, 768));
    plain.client_reference = None;
    let x = e.client.submit(&plain).await.expect("x");
    let y = e.client.submit(&plain).await.expect("y");
    assert_ne!(x.id, y.id);
    for id in [first.id, x.id, y.id] {
        let _ = e.client.cancel(&id).await;
    }
}
