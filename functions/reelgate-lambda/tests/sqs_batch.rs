//! The render worker's SQS adapter: messages to retry come back as batch item failures (and get
//! a short visibility), the rest count as handled. Runs on the embedded adapters, no AWS needed.

use reelgate::config::Settings;
use reelgate::domain::catalog::Catalog;
use reelgate_embedded::host::LocalBackend;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn retries_are_reported_as_batch_item_failures_and_the_rest_as_handled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("local backend");
    let catalog = Arc::new(Catalog::load(None).expect("catalog"));
    let settings = Settings {
        render_poll_interval: Duration::from_secs(1),
        ..Settings::default()
    };
    // No workflow on this host: a render that must fail its task cannot report it, so the
    // worker asks for the message again (Retry).
    let app = backend.app(catalog, settings);
    let retry_body =
        json!({"kind": "submit", "task_token": "t", "org": "org_x", "video_id": "video_missing"})
            .to_string();
    app.render_queue
        .send(&retry_body, Duration::ZERO)
        .await
        .expect("send");
    let received = app
        .render_queue
        .receive(1, Duration::from_secs(600), Duration::from_secs(1))
        .await
        .expect("receive");
    let message = received.first().expect("one message");
    let event = json!({"Records": [
        {"messageId": "m-garbage", "receiptHandle": "r-garbage", "body": "not a render message"},
        {"messageId": "m-retry", "receiptHandle": message.receipt, "body": message.body},
    ]});
    let event = serde_json::from_value(event).expect("an SQS event");
    let response = reelgate_lambda::handle_sqs_batch(&app, &event).await;
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        json!({"batchItemFailures": [{"itemIdentifier": "m-retry"}]})
    );
    // The retried message was made visible again after one poll interval, not the queue's 600 s.
    let again = app
        .render_queue
        .receive(1, Duration::from_secs(600), Duration::from_secs(5))
        .await
        .expect("receive again");
    assert_eq!(
        again.len(),
        1,
        "the message to retry is visible again within the poll interval"
    );

    let empty = serde_json::from_value(json!({"Records": []})).expect("an SQS event");
    let empty = reelgate_lambda::handle_sqs_batch(&app, &empty).await;
    assert_eq!(
        serde_json::to_value(&empty).expect("json"),
        json!({"batchItemFailures": []})
    );
}
