//! Heartbeats of engines whose progress cannot be observed: the worker keeps such a render alive
//! while the engine says it is running, so a long, healthy render is not failed as
//! `engine_unavailable`; an engine whose progress is observable and stops moving still is.

use async_trait::async_trait;
use bytes::Bytes;
use reelgate::domain::catalog::{Catalog, DEFAULT_CATALOG};
use reelgate::ports::engine::{EngineError, Render, RenderRequest, RenderStatus, VideoEngine};
use reelgate_embedded::testing::{agree, TestServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The state machine's waits run 20× faster: the Render state's 300 s heartbeat is 15 s.
const TIME_SCALE: f64 = 0.05;
/// Longer than that heartbeat, so only heartbeats sent without progress keep the render alive.
const RENDER_TIME: Duration = Duration::from_secs(25);

/// A fake engine that reports `rendering` at 0 % for [`RENDER_TIME`] (as an engine that cannot
/// tell its progress does), then succeeds with a real 4 s 768p MP4.
struct FakeOpaqueEngine {
    started: Mutex<Option<Instant>>,
    mp4: Bytes,
    canceled: AtomicBool,
}

impl FakeOpaqueEngine {
    fn new() -> Self {
        let spec = reelgate_media::RenderSpec::new(1366, 768, 4, "an opaque render");
        let mp4 = reelgate_media::render_mp4(&spec, &mut |_| {}, &AtomicBool::new(false))
            .expect("render");
        FakeOpaqueEngine {
            started: Mutex::new(None),
            mp4: Bytes::from(mp4),
            canceled: AtomicBool::new(false),
        }
    }

    fn render(&self) -> Render {
        let started = self
            .started
            .lock()
            .expect("lock")
            .unwrap_or_else(Instant::now);
        let done = started.elapsed() >= RENDER_TIME;
        Render {
            id: "rnd_opaque".into(),
            status: if done {
                RenderStatus::Succeeded
            } else {
                RenderStatus::Rendering
            },
            progress: if done { 100 } else { 0 },
            error: None,
            result_url: done.then(|| "fake://result".to_owned()),
            created_at: 0,
        }
    }
}

#[async_trait]
impl VideoEngine for FakeOpaqueEngine {
    async fn submit(&self, _request: &RenderRequest) -> Result<Render, EngineError> {
        *self.started.lock().expect("lock") = Some(Instant::now());
        Ok(self.render())
    }
    async fn status(&self, _render_id: &str) -> Result<Render, EngineError> {
        Ok(self.render())
    }
    async fn cancel(&self, _render_id: &str) -> Result<(), EngineError> {
        self.canceled.store(true, Ordering::SeqCst);
        Ok(())
    }
    async fn fetch_result(
        &self,
        _render: &Render,
    ) -> Result<reelgate::ports::engine::ByteStream, EngineError> {
        Ok(reelgate::ports::blobs::stream_of(self.mp4.clone()))
    }
}

/// Runs one job to its end; the server is returned so its render workers outlive the job.
async fn run(progress_observable: bool) -> (Value, Arc<FakeOpaqueEngine>, TestServer) {
    let text = DEFAULT_CATALOG.replace(
        "id = \"reference\"\nkind = \"reference\"",
        &format!(
            "id = \"reference\"\nkind = \"reference\"\nprogress_observable = {progress_observable}"
        ),
    );
    assert_ne!(text, DEFAULT_CATALOG);
    let catalog = Arc::new(Catalog::parse(&text).expect("catalog"));
    let server = TestServer::start_full(TIME_SCALE, |app| app.catalog = catalog).await;
    let engine = Arc::new(FakeOpaqueEngine::new());
    server.app.engines.insert("reference", engine.clone());
    let t = server.tenant("5.00").await;
    agree(&server.app, &t.org, &t.person).await;
    let client = reqwest::Client::new();
    let created: Value = client
        .post(server.url("/v1/videos"))
        .bearer_auth(&t.key)
        .json(&json!({"model": "reel-1", "prompt": "a long quiet render", "seconds": 4, "aspect_ratio": "16:9"}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let id = created["id"].as_str().expect("id").to_owned();
    let start = Instant::now();
    loop {
        let v: Value = client
            .get(server.url(&format!("/v1/videos/{id}")))
            .bearer_auth(&t.key)
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        if ["completed", "failed", "canceled"].contains(&v["status"].as_str().unwrap_or_default()) {
            return (v, engine, server);
        }
        assert!(start.elapsed() < Duration::from_secs(120), "{v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_render_without_observable_progress_is_kept_alive_and_completes() {
    let (done, engine, _server) = run(false).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["cost"], "0.40");
    assert!(!engine.canceled.load(Ordering::SeqCst));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_render_on_an_engine_whose_progress_should_move_misses_its_heartbeat() {
    let (done, engine, _server) = run(true).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"]["code"], "engine_unavailable", "{done}");
    // The worker's next look at the render finds the job ended and cancels it at the engine.
    let start = Instant::now();
    while !engine.canceled.load(Ordering::SeqCst) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the render is canceled at the engine"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
