//! `POST /v1/videos/{id}/cancel` on the local host: the real state machine on the embedded
//! runner and the render worker, with a fake engine (named so) whose renders the test holds at
//! each point: a job canceled in each running status ends `canceled`, its execution stopped,
//! its render canceled at the engine, nothing reserved and nothing charged; cancel/complete
//! races settle each job exactly once.

use async_trait::async_trait;
use bytes::Bytes;
use reelgate::ports::engine::{EngineError, Render, RenderRequest, RenderStatus, VideoEngine};
use reelgate::ports::moderator::{ModerationError, ModerationInput, Moderator, Verdict};
use reelgate::ports::store::Key;
use reelgate::ports::translator::{TranslationError, Translator};
use reelgate_embedded::testing::{agree, Tenant, TestServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TIME_SCALE: f64 = 0.05;

/// A gate a fake holds its call at until the test opens it.
#[derive(Default)]
struct Gate {
    open: AtomicBool,
    /// Callers that have reached the gate (held there until it opens).
    reached: AtomicU64,
}

impl Gate {
    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
    async fn pass(&self) {
        self.reached.fetch_add(1, Ordering::SeqCst);
        while !self.open.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    /// Waits until a caller is held at the gate: the job's step is really inside it (its status
    /// alone is written before the step runs, and a step that starts after the cancel finds the
    /// job terminal and ends the execution on its own).
    async fn wait_reached(&self, what: &str) {
        let start = Instant::now();
        while self.reached.load(Ordering::SeqCst) == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{what} is never reached"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A moderator that allows everything once its gate is open.
struct FakeGatedModerator(Arc<Gate>);

#[async_trait]
impl Moderator for FakeGatedModerator {
    async fn check(&self, _: &ModerationInput) -> Result<Verdict, ModerationError> {
        self.0.pass().await;
        Ok(Verdict {
            flagged: false,
            categories: Vec::new(),
            moderator: "fake".into(),
        })
    }
}

/// A translator that answers a fixed English sentence once its gate is open.
struct FakeGatedTranslator(Arc<Gate>);

#[async_trait]
impl Translator for FakeGatedTranslator {
    async fn translate(&self, _: &str) -> Result<String, TranslationError> {
        self.0.pass().await;
        Ok("a quiet harbour at dawn".to_owned())
    }
}

/// The fake engine: `submit` waits at its gate; renders stay `rendering` until `finish` is set,
/// then succeed with a prepared MP4; every cancel is recorded.
struct FakeEngine {
    submit_gate: Arc<Gate>,
    /// Submits that have reached the gate.
    submits_waiting: AtomicU64,
    finish: AtomicBool,
    mp4: Bytes,
    next: AtomicU64,
    canceled: Mutex<Vec<String>>,
}

impl FakeEngine {
    fn canceled(&self) -> Vec<String> {
        self.canceled.lock().expect("lock").clone()
    }
}

#[async_trait]
impl VideoEngine for FakeEngine {
    async fn submit(&self, _: &RenderRequest) -> Result<Render, EngineError> {
        self.submits_waiting.fetch_add(1, Ordering::SeqCst);
        self.submit_gate.pass().await;
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        Ok(render(
            &format!("rnd_{n:024x}"),
            RenderStatus::Rendering,
            10,
        ))
    }
    async fn status(&self, render_id: &str) -> Result<Render, EngineError> {
        if self.canceled().iter().any(|c| c == render_id) {
            return Ok(render(render_id, RenderStatus::Canceled, 10));
        }
        if self.finish.load(Ordering::SeqCst) {
            return Ok(render(render_id, RenderStatus::Succeeded, 100));
        }
        Ok(render(render_id, RenderStatus::Rendering, 10))
    }
    async fn cancel(&self, render_id: &str) -> Result<(), EngineError> {
        self.canceled
            .lock()
            .expect("lock")
            .push(render_id.to_owned());
        Ok(())
    }
    async fn fetch_result(
        &self,
        _: &Render,
    ) -> Result<reelgate::ports::engine::ByteStream, EngineError> {
        Ok(reelgate::ports::blobs::stream_of(self.mp4.clone()))
    }
}

fn render(id: &str, status: RenderStatus, progress: u8) -> Render {
    Render {
        id: id.to_owned(),
        status,
        progress,
        error: None,
        result_url: None,
        created_at: 0,
    }
}

/// A real 4-second 768×768 MP4 with audio: what finalize accepts for a 4 s, 1:1 job.
async fn clip() -> Bytes {
    tokio::task::spawn_blocking(|| {
        let spec = reelgate_media::RenderSpec::new(768, 768, 4, "fake engine output");
        reelgate_media::render_mp4(&spec, &mut |_| {}, &AtomicBool::new(false)).expect("render")
    })
    .await
    .expect("join")
    .into()
}

struct Rig {
    server: TestServer,
    moderation: Arc<Gate>,
    translation: Arc<Gate>,
    engine: Arc<FakeEngine>,
}

async fn rig() -> Rig {
    let moderation = Arc::new(Gate::default());
    let translation = Arc::new(Gate::default());
    let (m, t) = (moderation.clone(), translation.clone());
    let server = TestServer::start_full(TIME_SCALE, move |app| {
        app.moderator = Arc::new(FakeGatedModerator(m));
        app.translator = Some(Arc::new(FakeGatedTranslator(t)));
    })
    .await;
    let engine = Arc::new(FakeEngine {
        submit_gate: Arc::new(Gate::default()),
        submits_waiting: AtomicU64::new(0),
        finish: AtomicBool::new(false),
        mp4: clip().await,
        next: AtomicU64::new(1),
        canceled: Mutex::new(Vec::new()),
    });
    // The catalog's models render on engine `reference`: the fake takes its place.
    server.app.engines.insert("reference", engine.clone());
    Rig {
        server,
        moderation,
        translation,
        engine,
    }
}

async fn tenant(server: &TestServer, plan: &str, credits: &str) -> Tenant {
    let accounts = server.app.accounts();
    let org = accounts
        .create_org("Cancel org", plan, "usd", credits.parse().expect("credits"))
        .await
        .expect("org");
    let t = server.member(&org.id).await;
    agree(&server.app, &t.org, &t.person).await;
    t
}

async fn create(server: &TestServer, t: &Tenant, prompt: &str) -> String {
    let res = reqwest::Client::new()
        .post(server.url("/v1/videos"))
        .bearer_auth(&t.key)
        .json(&json!({"model": "reel-1", "prompt": prompt, "seconds": 4, "aspect_ratio": "1:1"}))
        .send()
        .await
        .expect("create");
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.expect("json");
    v["id"].as_str().expect("id").to_owned()
}

async fn get(server: &TestServer, t: &Tenant, id: &str) -> Value {
    reqwest::Client::new()
        .get(server.url(&format!("/v1/videos/{id}")))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json")
}

async fn cancel(server: &TestServer, key: &str, id: &str) -> (u16, Value) {
    let res = reqwest::Client::new()
        .post(server.url(&format!("/v1/videos/{id}/cancel")))
        .bearer_auth(key)
        .send()
        .await
        .expect("cancel");
    let status = res.status().as_u16();
    (status, res.json().await.expect("json"))
}

async fn wait_status(server: &TestServer, t: &Tenant, id: &str, want: &str) {
    let start = Instant::now();
    loop {
        let v = get(server, t, id).await;
        if v["status"] == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "job {id} never reached {want}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_terminal(server: &TestServer, t: &Tenant, id: &str) -> Value {
    let start = Instant::now();
    loop {
        let v = get(server, t, id).await;
        if ["completed", "failed", "canceled"].contains(&v["status"].as_str().unwrap_or("")) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "job {id} not terminal: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn charged(server: &TestServer, org: &str, id: &str) -> bool {
    server
        .app
        .store
        .get(&Key::new(format!("ORG#{org}"), format!("CHARGE#{id}")))
        .await
        .expect("get")
        .is_some()
}

async fn execution_status(server: &TestServer, id: &str) -> String {
    let runner = &server.services.as_ref().expect("services").workflow.runner;
    let snapshot = runner
        .describe(&runner.execution_id(id))
        .await
        .expect("describe")
        .expect("the execution exists");
    format!("{:?}", snapshot.status)
}

/// Cancels `id` (running in `status`) and checks everything a cancel promises.
async fn cancel_and_check(rig: &Rig, t: &Tenant, id: &str, status: &str, credits: &str) {
    let server = &rig.server;
    wait_status(server, t, id, status).await;
    let (code, body) = cancel(server, &t.key, id).await;
    assert_eq!(code, 200, "cancel in {status}: {body}");
    assert_eq!(body["object"], "video");
    assert_eq!(body["id"], id);
    assert_eq!(body["status"], "canceled", "{body}");
    assert!(body["completed_at"].as_i64().is_some());
    assert_eq!(get(server, t, id).await["status"], "canceled");
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.reserved.to_string(), "0.00", "canceled in {status}");
    assert_eq!(org.renders_in_flight, 0);
    assert_eq!(org.balance.to_string(), credits, "nothing charged");
    assert_eq!(org.available.to_string(), credits);
    assert!(!charged(server, &t.org, id).await, "no ledger charge");
    // The execution is stopped, not left to run on.
    assert_eq!(execution_status(server, id).await, "Aborted", "{status}");
    // Canceling again is a conflict; the job can now be deleted.
    let (code, again) = cancel(server, &t.key, id).await;
    assert_eq!(code, 409, "{again}");
    assert_eq!(again["error"]["code"], "conflict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_canceled_in_each_running_status_ends_canceled_unbilled() {
    let rig = rig().await;
    let server = &rig.server;
    let t = tenant(server, "starter", "5.00").await;

    // moderating: the moderator holds the job.
    let id = create(server, &t, "waves on a reef").await;
    rig.moderation.wait_reached("the moderator").await;
    cancel_and_check(&rig, &t, &id, "moderating", "5.00").await;
    rig.moderation.open();

    // translating: a Japanese prompt waits for the translator.
    let id = create(server, &t, "夜明けの静かな港").await;
    rig.translation.wait_reached("the translator").await;
    cancel_and_check(&rig, &t, &id, "translating", "5.00").await;
    rig.translation.open();

    // queued: the worker's submit waits at the engine, which has not yet accepted the render.
    // When it does, the worker finds the job canceled and cancels the render at the engine.
    let id = create(server, &t, "a lighthouse in fog").await;
    let start = Instant::now();
    while rig.engine.submits_waiting.load(Ordering::SeqCst) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the worker submits the render"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel_and_check(&rig, &t, &id, "queued", "5.00").await;
    rig.engine.submit_gate.open();
    let start = Instant::now();
    while rig.engine.canceled().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the late render is canceled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // in_progress: the render the job holds is canceled at the engine by the cancel itself.
    let id = create(server, &t, "a paper boat in the rain").await;
    wait_status(server, &t, &id, "in_progress").await;
    let render_id = server
        .app
        .store
        .get(&reelgate::domain::table_keys::job(&t.org, &id))
        .await
        .expect("get")
        .and_then(|i| reelgate::ports::store::ItemExt::str_attr(&i, "render_id").map(str::to_owned))
        .expect("render id");
    cancel_and_check(&rig, &t, &id, "in_progress", "5.00").await;
    assert!(rig.engine.canceled().contains(&render_id));

    // Nothing that runs on afterwards moves a canceled job.
    rig.engine.finish.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let res = reqwest::Client::new()
        .get(server.url("/v1/videos"))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("list");
    let list: Value = res.json().await.expect("json");
    let jobs = list["data"].as_array().expect("data");
    assert_eq!(jobs.len(), 4);
    assert!(jobs.iter().all(|j| j["status"] == "canceled"), "{list}");
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.balance.to_string(), "5.00");
    assert_eq!(org.reserved.to_string(), "0.00");

    // A canceled job can be deleted.
    let res = reqwest::Client::new()
        .delete(server.url(&format!("/v1/videos/{id}")))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("delete");
    assert_eq!(res.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_is_scoped_to_the_organization_and_refuses_finished_jobs() {
    let rig = rig().await;
    let server = &rig.server;
    rig.moderation.open();
    rig.translation.open();
    rig.engine.submit_gate.open();
    let t = tenant(server, "starter", "5.00").await;
    let other = tenant(server, "starter", "5.00").await;
    let id = create(server, &t, "a kite").await;

    // Another organization's job does not exist for it; nor does an unknown id.
    let (code, body) = cancel(server, &other.key, &id).await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["error"]["code"], "video_not_found");
    let (code, _) = cancel(server, &t.key, "video_0000000000000000000000000000").await;
    assert_eq!(code, 404);
    let (code, _) = cancel(server, "sk-not-a-key", &id).await;
    assert_eq!(code, 401);

    // A completed job cannot be canceled, and keeps its one charge.
    wait_status(server, &t, &id, "in_progress").await;
    rig.engine.finish.store(true, Ordering::SeqCst);
    let done = wait_terminal(server, &t, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let (code, body) = cancel(server, &t.key, &id).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict");
    assert_eq!(body["error"]["type"], "conflict_error");
    assert_eq!(get(server, &t, &id).await["status"], "completed");
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.balance.to_string(), "4.60");
    assert_eq!(org.reserved.to_string(), "0.00");
}

/// 50 jobs (two rounds of 25, under the plan's 32 renders in flight) whose renders finish at
/// the moment their cancels are sent, staggered so that both sides win some: each job ends
/// either `completed` with one ledger charge (its cancel answered 409) or `canceled` with none
/// (its cancel answered 200), and the organization's money adds up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_and_completion_races_settle_each_job_once() {
    let rig = rig().await;
    let server = &rig.server;
    rig.moderation.open();
    rig.translation.open();
    rig.engine.submit_gate.open();
    let t = tenant(server, "enterprise", "100.00").await;
    let (mut completed, mut canceled) = (0usize, 0usize);
    for round in 0..2 {
        rig.engine.finish.store(false, Ordering::SeqCst);
        let mut ids = Vec::new();
        for i in 0..25 {
            ids.push(create(server, &t, &format!("race {round}-{i}")).await);
        }
        for id in &ids {
            wait_status(server, &t, id, "in_progress").await;
        }
        rig.engine.finish.store(true, Ordering::SeqCst);
        let mut tasks = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            let (base, key, id) = (server.base_url.clone(), t.key.clone(), id.clone());
            tasks.push(tokio::spawn(async move {
                // Staggered over the ~6 s in which the two render workers pick up the finished
                // renders (200 ms poll interval) and finalize checks and charges them, so some
                // cancels land before a job's charge, some during, some after.
                tokio::time::sleep(Duration::from_millis(i as u64 * 250)).await;
                let res = reqwest::Client::new()
                    .post(format!("{base}/v1/videos/{id}/cancel"))
                    .bearer_auth(&key)
                    .send()
                    .await
                    .expect("cancel");
                (id, res.status().as_u16())
            }));
        }
        for task in tasks {
            let (id, code) = task.await.expect("join");
            let done = wait_terminal(server, &t, &id).await;
            let is_charged = charged(server, &t.org, &id).await;
            match code {
                200 => {
                    assert_eq!(done["status"], "canceled", "{done}");
                    assert!(!is_charged, "a canceled job {id} was charged");
                    canceled += 1;
                }
                409 => {
                    assert_eq!(done["status"], "completed", "{done}");
                    assert!(is_charged, "a completed job {id} was not charged");
                    completed += 1;
                }
                other => panic!("cancel of {id} answered {other}"),
            }
        }
    }
    eprintln!("races: {completed} completed, {canceled} canceled");
    assert_eq!(completed + canceled, 50);
    let org = server.app.accounts().org(&t.org).await.expect("org");
    let spent = rust_decimal::Decimal::new(40, 2) * rust_decimal::Decimal::from(completed as u64);
    assert_eq!(
        org.balance,
        "100.00".parse::<rust_decimal::Decimal>().expect("d") - spent
    );
    assert_eq!(org.available, org.balance);
    assert_eq!(org.reserved.to_string(), "0.00");
    assert_eq!(org.renders_in_flight, 0);
}
