//! The render workflow end to end on the local host: the real state machine file on the
//! embedded runner, the render worker, the in-process reference engine rendering real MP4s,
//! output checks, thumbnails, billing exactly once, every failure code, restarts and retention.

use async_trait::async_trait;
use reelgate::ports::moderator::{ModerationError, ModerationInput, Moderator, Verdict};
use reelgate::ports::translator::{TranslationError, Translator};
use reelgate_embedded::testing::{agree, Tenant, TestServer};
use reelgate_engine::FaultSwitches;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Waits of the state machine run 20× faster (a 300 s heartbeat is 15 s, so a loaded 2-core
/// machine still reports progress in time, while a silent engine is caught quickly).
const TIME_SCALE: f64 = 0.05;

async fn tenant(server: &TestServer, credits: &str) -> Tenant {
    let t = server.tenant(credits).await;
    agree(&server.app, &t.org, &t.person).await;
    t
}

async fn create(server: &TestServer, t: &Tenant, body: Value) -> Value {
    let res = reqwest::Client::new()
        .post(server.url("/v1/videos"))
        .bearer_auth(&t.key)
        .json(&body)
        .send()
        .await
        .expect("create");
    assert_eq!(res.status(), 200);
    res.json().await.expect("json")
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

/// Polls until the job is terminal (or `timeout`), returning the statuses seen in order.
async fn wait_terminal(
    server: &TestServer,
    t: &Tenant,
    id: &str,
    timeout: Duration,
) -> (Value, Vec<String>) {
    let start = Instant::now();
    let mut seen: Vec<String> = Vec::new();
    loop {
        let v = get(server, t, id).await;
        let status = v["status"].as_str().unwrap_or_default().to_owned();
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if ["completed", "failed", "canceled"].contains(&status.as_str()) {
            return (v, seen);
        }
        assert!(
            start.elapsed() < timeout,
            "job {id} still {status} after {timeout:?}: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn assert_unbilled(server: &TestServer, t: &Tenant, credits: &str) {
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.balance.to_string(), credits, "balance untouched");
    assert_eq!(org.available.to_string(), credits, "reservation released");
    assert_eq!(org.reserved.to_string(), "0.00");
    assert_eq!(org.renders_in_flight, 0);
}

fn job(prompt: &str, seconds: u32, aspect: &str) -> Value {
    json!({"model": "reel-1", "prompt": prompt, "seconds": seconds, "aspect_ratio": aspect})
}

fn set_faults(server: &TestServer, faults: FaultSwitches) {
    server
        .services
        .as_ref()
        .expect("services")
        .engine
        .set_faults(faults);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_renders_to_a_real_768p_mp4_with_thumbnail_and_is_billed_once() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let created = create(&server, &t, job("a red kite over green hills", 4, "16:9")).await;
    let id = created["id"].as_str().expect("id").to_owned();
    let (done, seen) = wait_terminal(&server, &t, &id, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["progress"], 100);
    assert_eq!(done["cost"], "0.40");
    assert_eq!(done["thumbnail"], true);
    assert_eq!(done["size"], "1366x768");
    assert!(done["completed_at"].as_i64().is_some());
    assert_eq!(
        done["expires_at"].as_i64(),
        done["completed_at"].as_i64().map(|c| c + 30 * 24 * 3600)
    );
    // Statuses only move forward through the spec's sequence.
    let order = [
        "moderating",
        "translating",
        "queued",
        "in_progress",
        "completed",
    ];
    let positions: Vec<usize> = seen
        .iter()
        .map(|s| order.iter().position(|o| o == s).expect("known status"))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{seen:?}");

    let http = reqwest::Client::new();
    let mp4 = http
        .get(server.url(&format!("/v1/videos/{id}/content")))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("content");
    assert_eq!(mp4.headers()["content-type"], "video/mp4");
    let mp4 = mp4.bytes().await.expect("bytes");
    let probe = reelgate_media::probe_mp4(&mp4).expect("probe");
    let video = probe.video.expect("video track");
    assert_eq!((video.width, video.height), (1366, 768));
    assert!(
        video.codec.contains("avc") || video.codec.contains("264"),
        "{}",
        video.codec
    );
    let audio = probe.audio.expect("audio track");
    assert!(
        audio.codec.contains("aac") || audio.codec.contains("mp4a"),
        "{}",
        audio.codec
    );
    assert!(
        (probe.duration_secs - 4.0).abs() < 0.1,
        "{}",
        probe.duration_secs
    );

    let thumb = http
        .get(server.url(&format!("/v1/videos/{id}/thumbnail")))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("thumb");
    assert_eq!(thumb.headers()["content-type"], "image/jpeg");
    let jpeg = image::load_from_memory(&thumb.bytes().await.expect("bytes")).expect("jpeg");
    assert_eq!(jpeg.width(), 480);

    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.balance.to_string(), "4.60");
    assert_eq!(org.available.to_string(), "4.60");
    assert_eq!(org.reserved.to_string(), "0.00");
    assert_eq!(org.renders_in_flight, 0);
    let charge = server
        .app
        .store
        .get(&reelgate::ports::store::Key::new(
            format!("ORG#{}", t.org),
            format!("CHARGE#{id}"),
        ))
        .await
        .expect("get");
    assert!(charge.is_some(), "a ledger entry records the charge");

    // A duplicated completion (a retried finalize, a repeated callback) charges nothing more.
    let again = reelgate_embedded::workflow::run_step_payload(
        &server.app.pipeline(),
        "finalize",
        json!({"org": t.org, "video_id": id, "render": {"output_key": reelgate::domain::videos::output_blob_key(&t.org, &id), "render_id": "rnd_x"}}),
    )
    .await
    .expect("finalize again");
    assert_eq!(again["charged"], false);
    assert_eq!(again, json!({"charged": false, "already": true}));
    let settled = reelgate::domain::videos::settlement::charge(
        server.app.store.as_ref(),
        &t.org,
        &id,
        "0.40".parse().expect("d"),
        "usd",
        reelgate::ports::store::Update::new(),
        reelgate::domain::billing::render_charges::RenderUsage {
            model: "test-video",
            key: "console",
            seconds: 4,
        },
    )
    .await
    .expect("charge");
    assert_eq!(
        settled,
        reelgate::domain::videos::settlement::Settlement::AlreadySettled
    );
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.balance.to_string(), "4.60");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn portrait_and_auto_follow_the_aspect_ratio() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a tall waterfall", 4, "9:16")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["size"], "768x1366");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn moderation_blocked_fails_unbilled_and_keeps_the_record_after_delete() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a scene of graphic gore", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(60)).await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"]["code"], "moderation_blocked");
    assert!(done["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    assert_unbilled(&server, &t, "5.00").await;
    let res = reqwest::Client::new()
        .delete(server.url(&format!("/v1/videos/{id}")))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("delete");
    assert_eq!(res.status(), 200);
    let record = server
        .app
        .store
        .get(&reelgate::domain::videos::moderation::record_key(
            &t.org, &id,
        ))
        .await
        .expect("get")
        .expect("record kept");
    use reelgate::ports::store::ItemExt;
    assert_eq!(record.str_attr("verdict"), Some("blocked"));
    let kept_until = record.i64_attr("expires_at").expect("expiry");
    assert!(kept_until > reelgate::ports::store::now_secs() + 29 * 24 * 3600);
}

struct FakeDownModerator;
#[async_trait]
impl Moderator for FakeDownModerator {
    async fn check(&self, _: &ModerationInput) -> Result<Verdict, ModerationError> {
        Err(ModerationError::Unavailable(
            "fake moderator is down".into(),
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn moderation_unavailable_fails_closed() {
    let server = TestServer::start_full(TIME_SCALE, |app| {
        app.moderator = Arc::new(FakeDownModerator)
    })
    .await;
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a calm lake", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(60)).await;
    assert_eq!(done["error"]["code"], "moderation_unavailable", "{done}");
    assert_unbilled(&server, &t, "5.00").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn japanese_without_a_translator_fails_as_translation_unavailable() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("夕暮れの海辺を歩く猫", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(60)).await;
    assert_eq!(done["error"]["code"], "translation_unavailable", "{done}");
    assert_unbilled(&server, &t, "5.00").await;
}

/// A fake translator that knows one sentence, and mangles anything it is not given as a
/// placeholder (so only protected spans survive).
struct FakeTranslator;
#[async_trait]
impl Translator for FakeTranslator {
    async fn translate(&self, text: &str) -> Result<String, TranslationError> {
        Ok(text
            .replace("猫が海辺で言う", "A cat on the beach says ")
            .replace("看板には", ", a sign reads "))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn japanese_reaches_the_engine_in_english_with_dialogue_unchanged() {
    let server = TestServer::start_full(TIME_SCALE, |app| {
        app.translator = Some(Arc::new(FakeTranslator))
    })
    .await;
    let t = tenant(&server, "5.00").await;
    let prompt = "猫が海辺で言う<d>こんにちは</d>看板には「営業中」";
    let created = create(&server, &t, job(prompt, 4, "16:9")).await;
    let id = created["id"].as_str().expect("id").to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["prompt"], prompt, "the job keeps what the caller sent");
    use reelgate::ports::store::ItemExt;
    let item = server
        .app
        .store
        .get(&reelgate::domain::table_keys::job(&t.org, &id))
        .await
        .expect("get")
        .expect("job");
    assert_eq!(
        item.str_attr("engine_prompt"),
        Some("A cat on the beach says <d>こんにちは</d>, a sign reads 「営業中」")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn engine_unreachable_at_submit_fails_unbilled() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    set_faults(
        &server,
        FaultSwitches {
            drop_connection: true,
            ..Default::default()
        },
    );
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a windmill", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(60)).await;
    assert_eq!(done["error"]["code"], "engine_unavailable", "{done}");
    assert_unbilled(&server, &t, "5.00").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn engine_killed_mid_render_fails_unbilled() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a long train", 15, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let start = Instant::now();
    loop {
        if get(&server, &t, &id).await["status"] == "in_progress" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    set_faults(
        &server,
        FaultSwitches {
            drop_connection: true,
            ..Default::default()
        },
    );
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(60)).await;
    assert_eq!(done["error"]["code"], "engine_unavailable", "{done}");
    assert_unbilled(&server, &t, "5.00").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_silent_engine_misses_heartbeats_and_fails() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    set_faults(
        &server,
        FaultSwitches {
            hang: true,
            ..Default::default()
        },
    );
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a frozen clock", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(60)).await;
    assert_eq!(done["error"]["code"], "engine_unavailable", "{done}");
    assert_unbilled(&server, &t, "5.00").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn engine_failure_and_bad_output_fail_unbilled() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    set_faults(
        &server,
        FaultSwitches {
            fail: true,
            ..Default::default()
        },
    );
    let id = create(&server, &t, job("a broken render", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(60)).await;
    assert_eq!(done["error"]["code"], "engine_unavailable", "{done}");
    set_faults(
        &server,
        FaultSwitches {
            bad_output: true,
            ..Default::default()
        },
    );
    let id = create(&server, &t, job("a small render", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(120)).await;
    assert_eq!(done["error"]["code"], "engine_unavailable", "{done}");
    assert_eq!(done["thumbnail"], false);
    assert_unbilled(&server, &t, "5.00").await;
    // The engine's unusable output is deleted with the failure, not kept until retention.
    for key in reelgate::domain::videos::job_blob_keys(&t.org, &id) {
        assert!(
            server.app.blobs.head(&key).await.expect("head").is_none(),
            "{key} outlived the failed job"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restart_mid_render_ends_every_job_terminal() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    server
        .app
        .accounts()
        .set_plan(&t.org, "pro")
        .await
        .expect("plan");
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(
            create(&server, &t, job("a ferris wheel at night", 8, "16:9")).await["id"]
                .as_str()
                .expect("id")
                .to_owned(),
        );
    }
    let start = Instant::now();
    loop {
        if get(&server, &t, &ids[0]).await["status"] == "in_progress" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (dir, addr) = server.stop();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = TestServer::start_full_in(dir, Some(addr), TIME_SCALE, |_| {}).await;
    for id in &ids {
        let (done, _) = wait_terminal(&server, &t, id, Duration::from_secs(120)).await;
        let status = done["status"].as_str().unwrap_or_default();
        assert!(
            status == "completed" || done["error"]["code"] == "engine_unavailable",
            "{done}"
        );
    }
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.renders_in_flight, 0);
    assert_eq!(org.reserved.to_string(), "0.00");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retention_sweeps_finished_jobs_and_expired_files() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a paper boat", 4, "1:1")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["size"], "768x768");
    let key = reelgate::domain::table_keys::job(&t.org, &id);
    let past = reelgate::ports::store::now_secs() - 1;
    server
        .app
        .store
        .update(
            &key,
            reelgate::ports::store::Update::new().set("expires_at", past),
            None,
        )
        .await
        .expect("age");
    let report =
        reelgate_embedded::retention::sweep(&server.backend, reelgate::ports::store::now_secs())
            .await
            .expect("sweep");
    assert!(report.records >= 1, "{report:?}");
    assert!(server.app.store.get(&key).await.expect("get").is_none());
    assert!(server
        .app
        .blobs
        .head(&reelgate::domain::videos::output_blob_key(&t.org, &id))
        .await
        .expect("head")
        .is_none());
    assert!(server
        .app
        .blobs
        .head(&reelgate::domain::videos::thumbnail_blob_key(&t.org, &id))
        .await
        .expect("head")
        .is_none());
    // The moderation record outlives the video.
    assert!(server
        .app
        .store
        .get(&reelgate::domain::videos::moderation::record_key(
            &t.org, &id
        ))
        .await
        .expect("get")
        .is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_whose_execution_ended_without_settling_is_failed_unbilled() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    set_faults(
        &server,
        FaultSwitches {
            hang: true,
            ..Default::default()
        },
    );
    let t = tenant(&server, "5.00").await;
    let id = create(&server, &t, job("a stalled render", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let start = Instant::now();
    while get(&server, &t, &id).await["status"] != "in_progress" {
        assert!(start.elapsed() < Duration::from_secs(60), "never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The execution stops (as an operator's StopExecution would) while the job runs.
    let runner = &server.services.as_ref().expect("services").workflow.runner;
    runner
        .stop_execution(
            &runner.execution_id(&id),
            Some("Operator"),
            Some("stopped by hand"),
        )
        .await
        .expect("stop");
    let journal = reelgate_embedded::journal::SqliteJournal::new(server.backend.db.clone());
    let failed = reelgate_embedded::recovery::reconcile(&server.app, &journal)
        .await
        .expect("reconcile");
    assert_eq!(failed, 1);
    let (done, _) = wait_terminal(&server, &t, &id, Duration::from_secs(10)).await;
    assert_eq!(done["error"]["code"], "engine_unavailable", "{done}");
    assert_unbilled(&server, &t, "5.00").await;
    assert_eq!(
        reelgate_embedded::recovery::reconcile(&server.app, &journal)
            .await
            .expect("again"),
        0
    );
}

async fn send(request: reqwest::RequestBuilder) -> (u16, Value) {
    let res = request.send().await.expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_native_remix_shows_its_source_from_its_own_copy_and_is_billed_once() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let http = reqwest::Client::new();
    let mut png = std::io::Cursor::new(Vec::new());
    image::RgbImage::from_pixel(64, 36, image::Rgb([220, 30, 30]))
        .write_to(&mut png, image::ImageFormat::Png)
        .expect("png");
    let form = reqwest::multipart::Form::new()
        .text("purpose", "vision")
        .part(
            "file",
            reqwest::multipart::Part::bytes(png.into_inner()).file_name("red.png"),
        );
    let (status, file) = send(
        http.post(server.url("/v1/files"))
            .bearer_auth(&t.key)
            .multipart(form),
    )
    .await;
    assert_eq!(status, 200, "{file}");
    let file_id = file["id"].as_str().expect("file id").to_owned();
    let mut body = job("a red kite over green hills", 4, "16:9");
    body["image_reference"] = json!([{"file_id": file_id, "role": "first_frame"}]);
    let source = create(&server, &t, body).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let remix_url = server.url(&format!("/v1/videos/{source}/remix"));
    let remix_body = json!({"prompt": "the same kite at night under neon signs"});

    // A source still rendering cannot be remixed, and the refusal reserves nothing.
    let (status, refused) = send(http.post(&remix_url).bearer_auth(&t.key).json(&remix_body)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "video_id");
    let (done, _) = wait_terminal(&server, &t, &source, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "completed", "{done}");
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.balance.to_string(), "4.60");

    // Another organization's key finds no such video, and makes no job.
    let other = tenant(&server, "5.00").await;
    let (status, _) = send(
        http.post(&remix_url)
            .bearer_auth(&other.key)
            .json(&remix_body),
    )
    .await;
    assert_eq!(status, 404);
    let other_org = server.app.accounts().org(&other.org).await.expect("org");
    assert_eq!(other_org.renders_in_flight, 0);
    assert_eq!(other_org.reserved.to_string(), "0.00");

    let (status, remix) = send(http.post(&remix_url).bearer_auth(&t.key).json(&remix_body)).await;
    assert_eq!(status, 200, "{remix}");
    let remix_id = remix["id"].as_str().expect("id").to_owned();
    assert_eq!(remix["remixed_from_video_id"], source.as_str());
    assert_eq!(
        (&remix["model"], &remix["seconds"], &remix["aspect_ratio"]),
        (&done["model"], &done["seconds"], &done["aspect_ratio"])
    );
    assert_eq!(
        remix["cost"], "0.40",
        "quoted as a create of the source's seconds"
    );
    // Neither the source nor the file it was made from is needed any more.
    for path in [
        format!("/v1/videos/{source}"),
        format!("/v1/files/{file_id}"),
    ] {
        let (status, body) = send(http.delete(server.url(&path)).bearer_auth(&t.key)).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (remixed, _) = wait_terminal(&server, &t, &remix_id, Duration::from_secs(120)).await;
    assert_eq!(remixed["status"], "completed", "{remixed}");
    assert_eq!(remixed["remixed_from_video_id"], source.as_str());
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(
        org.balance.to_string(),
        "4.20",
        "each job billed its quote once"
    );
    assert_eq!(org.reserved.to_string(), "0.00");

    // The reference engine remixes natively: the remix shows the source's (red) frames.
    let mp4 = http
        .get(server.url(&format!("/v1/videos/{remix_id}/content")))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("content")
        .bytes()
        .await
        .expect("bytes");
    let opening = image::load_from_memory(&reelgate_media::first_frame_jpeg(&mp4).expect("frame"))
        .expect("jpeg")
        .to_rgb8();
    let p = opening
        .get_pixel(opening.width() / 2, opening.height() / 2)
        .0;
    assert!(
        p[0] > 150 && p[1] < 120 && p[2] < 120,
        "the remix opens red: {p:?}"
    );

    // A spritesheet: 16 frames of 160 px in 4 columns.
    let sheet = http
        .get(server.url(&format!(
            "/v1/videos/{remix_id}/content?variant=spritesheet"
        )))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("spritesheet");
    assert_eq!(sheet.headers()["content-type"], "image/jpeg");
    let sheet = image::load_from_memory(&sheet.bytes().await.expect("bytes")).expect("jpeg");
    assert_eq!((sheet.width(), sheet.height()), (640, 360));

    // Deleting the remix deletes every blob it owned, its source copy and frame included.
    let blobs = server.app.blobs.clone();
    let owned = reelgate::domain::videos::job_blob_keys(&t.org, &remix_id);
    let written = [
        reelgate::domain::videos::output_blob_key(&t.org, &remix_id),
        reelgate::domain::videos::spritesheet_blob_key(&t.org, &remix_id),
        reelgate::domain::videos::source_video_blob_key(&t.org, &remix_id),
    ];
    let chained_frame = reelgate::domain::videos::source_frame_blob_key(&t.org, &remix_id);
    assert!(
        blobs.head(&chained_frame).await.expect("head").is_none(),
        "a native remix takes the source video, not a frame of it"
    );
    for key in &written {
        assert!(owned.contains(key), "{key} is owned by the job");
        assert!(blobs.head(key).await.expect("head").is_some(), "{key}");
    }
    let (status, _) = send(
        http.delete(server.url(&format!("/v1/videos/{remix_id}")))
            .bearer_auth(&t.key),
    )
    .await;
    assert_eq!(status, 200);
    for key in &owned {
        assert!(blobs.head(key).await.expect("head").is_none(), "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_source_whose_output_vanished_mid_request_reserves_nothing() {
    let server = TestServer::start_full(TIME_SCALE, |_| {}).await;
    let t = tenant(&server, "5.00").await;
    let source = create(&server, &t, job("a quiet harbour", 4, "16:9")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (done, _) = wait_terminal(&server, &t, &source, Duration::from_secs(120)).await;
    assert_eq!(done["status"], "completed", "{done}");
    // A delete racing the request: the record still reads completed, its output is gone.
    server
        .app
        .blobs
        .delete(&reelgate::domain::videos::output_blob_key(&t.org, &source))
        .await
        .expect("delete");
    let http = reqwest::Client::new();
    for (path, body, param) in [
        (
            format!("/v1/videos/{source}/remix"),
            json!({"prompt": "at night"}),
            "video_id",
        ),
        (
            "/v1/videos/extensions".to_owned(),
            json!({"prompt": "on", "seconds": 4, "video": {"id": source}}),
            "video",
        ),
    ] {
        let (status, refused) =
            send(http.post(server.url(&path)).bearer_auth(&t.key).json(&body)).await;
        assert_eq!(status, 400, "{path}: {refused}");
        assert_eq!(refused["error"]["param"], param, "{refused}");
    }
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.reserved.to_string(), "0.00");
    assert_eq!(org.renders_in_flight, 0);
    assert_eq!(
        org.balance.to_string(),
        "4.60",
        "only the source was charged"
    );
}
