//! The workflow steps' payloads at the host edge: the JSON `statemachine/video.asl.json` passes
//! each step (its `Parameters.Payload`) and reads back (its `ResultSelector`), and the error a
//! payload that does not fit fails the step with. These pin the wire shape: the state machine
//! and the deployed Step Functions definition depend on it, not on the Rust types behind it.

use reelgate::domain::videos::workflow::steps::StepError;
use reelgate_embedded::testing::{agree, Tenant, TestServer};
use reelgate_embedded::workflow::run_step_payload;
use serde_json::{json, Value};

const STEP_NAMES: [&str; 5] = ["moderate", "translate", "stitch", "finalize", "fail_job"];

async fn tenant(server: &TestServer) -> Tenant {
    let t = server.tenant("5.00").await;
    agree(&server.app, &t.org, &t.person).await;
    t
}

/// A job admitted on a host with no workflow: it waits, running, for steps run by hand.
async fn waiting_job(server: &TestServer, t: &Tenant) -> String {
    let res = reqwest::Client::new()
        .post(server.url("/v1/videos"))
        .bearer_auth(&t.key)
        .json(&json!({"model": "reel-1", "prompt": "a quiet harbour", "seconds": 4, "aspect_ratio": "16:9"}))
        .send()
        .await
        .expect("create");
    let status = res.status();
    let body: Value = res.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    body["id"].as_str().expect("id").to_owned()
}

async fn run(server: &TestServer, step: &str, payload: Value) -> Result<Value, StepError> {
    run_step_payload(&server.app.pipeline(), step, payload).await
}

/// The payload the definition builds for a job step (`org`, `video_id`, `traceparent`).
fn job_payload(t: &Tenant, id: &str) -> Value {
    json!({"org": t.org, "video_id": id, "traceparent": null})
}

#[tokio::test]
async fn moderate_then_translate_answer_what_their_result_selectors_read() {
    let server = TestServer::start().await;
    let t = tenant(&server).await;
    let id = waiting_job(&server, &t).await;
    let moderated = run(&server, "moderate", job_payload(&t, &id)).await;
    assert_eq!(moderated, Ok(json!({"verdict": "allowed"})));
    // A traceparent that is not a string is no traceparent, as a missing one is.
    let translated = run(
        &server,
        "translate",
        json!({"org": t.org, "video_id": id, "traceparent": 7}),
    )
    .await;
    assert_eq!(translated, Ok(json!({"translated": false})));
}

#[tokio::test]
async fn stitch_passes_a_render_that_is_no_extension_through() {
    let server = TestServer::start().await;
    let t = tenant(&server).await;
    let id = waiting_job(&server, &t).await;
    let render = json!({
        "output_key": reelgate::domain::videos::output_blob_key(&t.org, &id),
        "render_id": "rnd_1",
    });
    let payload = json!({"org": t.org, "video_id": id, "render": render, "traceparent": null});
    assert_eq!(run(&server, "stitch", payload).await, Ok(render));
}

#[tokio::test]
async fn finalize_refuses_a_render_outside_the_jobs_folder() {
    let server = TestServer::start().await;
    let t = tenant(&server).await;
    let id = waiting_job(&server, &t).await;
    let payload = json!({
        "org": t.org,
        "video_id": id,
        "render": {"output_key": "other/videos/v/out.mp4", "render_id": "rnd_1"},
        "traceparent": null,
    });
    let failed = run(&server, "finalize", payload)
        .await
        .expect_err("refused");
    assert_eq!(
        failed,
        StepError::new(
            "BadStepInput",
            "the render result names a blob outside the job's folder"
        )
    );
}

#[tokio::test]
async fn fail_job_answers_the_stored_code_and_ignores_the_raw_cause() {
    let server = TestServer::start().await;
    let t = tenant(&server).await;
    let blocked = waiting_job(&server, &t).await;
    let payload = json!({
        "org": t.org,
        "video_id": blocked,
        "traceparent": null,
        "code": "moderation_blocked",
        "error": "ModerationBlocked",
        "cause": "arn:aws:lambda:raw cause",
    });
    assert_eq!(
        run(&server, "fail_job", payload).await,
        Ok(json!({"failed": "moderation_blocked"}))
    );
    // A code that is not a string (or none) is the engine's failure.
    let other = waiting_job(&server, &t).await;
    let payload = json!({"org": t.org, "video_id": other, "code": null});
    assert_eq!(
        run(&server, "fail_job", payload).await,
        Ok(json!({"failed": "engine_unavailable"}))
    );
    // A job that already ended: the job steps say so with the name the definition catches.
    let payload = job_payload(&t, &other);
    assert_eq!(
        run(&server, "moderate", payload).await.map_err(|e| e.error),
        Err("JobNotRunning".to_owned())
    );
}

#[tokio::test]
async fn a_payload_without_its_job_fails_every_step_as_bad_input() {
    let server = TestServer::start().await;
    for step in STEP_NAMES {
        let failed = run(&server, step, json!({"org": "org_x", "traceparent": null}))
            .await
            .expect_err("refused");
        assert_eq!(
            failed,
            StepError::new("BadStepInput", format!("{step}: missing field `video_id`")),
        );
        let failed = run(&server, step, json!({"org": "org_x", "video_id": 3}))
            .await
            .expect_err("refused");
        assert_eq!(failed.error, "BadStepInput", "{step}");
        assert!(
            failed
                .cause
                .starts_with(&format!("{step}: invalid type: integer `3`")),
            "{failed}"
        );
    }
}

#[tokio::test]
async fn a_render_step_without_a_whole_render_result_fails_as_bad_input() {
    let server = TestServer::start().await;
    let t = tenant(&server).await;
    let id = waiting_job(&server, &t).await;
    for step in ["stitch", "finalize"] {
        let payload = json!({"org": t.org, "video_id": id, "render": {"output_key": "k"}});
        let failed = run(&server, step, payload).await.expect_err("refused");
        assert_eq!(failed.error, "BadStepInput", "{step}");
        assert!(
            failed.cause.contains("missing field `render_id`"),
            "{failed}"
        );
        let payload = json!({"org": t.org, "video_id": id});
        let failed = run(&server, step, payload).await.expect_err("refused");
        assert_eq!(failed.error, "BadStepInput", "{step}");
    }
    // The job was never touched: it still waits.
    let moderated = run(&server, "moderate", job_payload(&t, &id)).await;
    assert_eq!(moderated, Ok(json!({"verdict": "allowed"})));
}

#[tokio::test]
async fn an_unknown_step_fails_as_bad_input() {
    let server = TestServer::start().await;
    let failed = run(&server, "render", json!({"org": "o", "video_id": "v"}))
        .await
        .expect_err("refused");
    assert_eq!(
        failed,
        StepError::new("BadStepInput", "unknown step render")
    );
}
