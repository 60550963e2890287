//! The reconciler of ended executions (EventBridge → `execution-ended`): a job left running by an
//! execution that failed, timed out or was aborted is failed, unbilled, exactly once. Runs the
//! real API on the embedded adapters (no AWS needed); the job is admitted through
//! `POST /v1/videos` on a host without a workflow, so it stays `moderating`, as a job does whose
//! execution died before settling it.

use reelgate::config::Settings;
use reelgate::domain::accounts::Accounts;
use reelgate::domain::catalog::Catalog;
use reelgate_embedded::backend::LocalBackend;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::sync::Arc;

#[tokio::test]
async fn a_job_left_running_by_an_ended_execution_is_failed_unbilled_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("local backend");
    let catalog = Arc::new(Catalog::load(None).expect("catalog"));
    let mut app = backend.app(catalog.clone(), Settings::default());
    // An engine must be configured for admission; it is never called here.
    app.engines = Arc::new(
        reelgate::adapters::engines_from_catalog(&catalog, Some("http://127.0.0.1:9"))
            .expect("engines"),
    );

    let accounts = Accounts::new(app.store.as_ref());
    let credits: Decimal = "5.00".parse().expect("decimal");
    let org = accounts
        .create_org("reconcile", "starter", "usd", credits)
        .await
        .expect("org");
    let person = accounts
        .create_person(&org.id, "r@reelgate.test")
        .await
        .expect("person");
    let key = accounts
        .create_api_key(&person.id)
        .await
        .expect("key")
        .secret;
    reelgate_embedded::testing::agree(&app, &org.id, &person.id).await;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let router = reelgate::api::router(app.clone());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{base}/v1/videos"))
        .bearer_auth(&key)
        .json(&json!({"model": "reel-1", "prompt": "A lighthouse at dusk", "seconds": 4, "aspect_ratio": "16:9"}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("job");
    let video_id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["status"], "moderating", "{created}");
    assert!(accounts.org(&org.id).await.expect("org").reserved > Decimal::ZERO);

    let event = |status: &str| {
        let event = json!({
            "source": "aws.states",
            "detail-type": "Step Functions Execution Status Change",
            "detail": {
                "executionArn": format!("arn:aws:states:us-east-1:000000000000:execution:video:{video_id}"),
                "status": status,
                "input": json!({"org": org.id, "video_id": video_id}).to_string(),
            }
        });
        serde_json::from_value::<
            aws_lambda_events::eventbridge::EventBridgeEvent<
                reelgate_lambda::ExecutionStatusChange,
            >,
        >(event)
        .expect("an EventBridge event")
    };
    // A succeeded execution settled its job itself: nothing to do.
    assert!(
        !reelgate_lambda::handle_execution_ended(&app, &event("SUCCEEDED"))
            .await
            .expect("succeeded")
    );
    assert!(
        reelgate_lambda::handle_execution_ended(&app, &event("TIMED_OUT"))
            .await
            .expect("timed out")
    );
    // A redelivered event finds the job terminal.
    assert!(
        !reelgate_lambda::handle_execution_ended(&app, &event("TIMED_OUT"))
            .await
            .expect("again")
    );

    let job: Value = http
        .get(format!("{base}/v1/videos/{video_id}"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("job");
    assert_eq!(job["status"], "failed", "{job}");
    assert_eq!(job["error"]["code"], "engine_unavailable", "{job}");
    let after = accounts.org(&org.id).await.expect("org");
    assert_eq!(after.balance, credits, "never billed: {after:?}");
    assert_eq!(
        after.reserved,
        Decimal::ZERO,
        "reservation released: {after:?}"
    );
    assert_eq!(after.renders_in_flight, 0, "{after:?}");
    server.abort();
}
