//! The render worker's SQS adapter: messages to retry come back as batch item failures (and get
//! a short visibility), the rest count as handled. Runs on the embedded adapters, no AWS needed.

use reelgate::config::Settings;
use reelgate::domain::catalog::Catalog;
use reelgate_embedded::backend::LocalBackend;
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

/// The webhook worker's SQS adapter: a failed delivery is not a failed record (its retry is a
/// new message), so garbage, a deleted endpoint and a wait longer than a hop are all handled;
/// a worker without its queue reports every record to retry.
#[tokio::test]
async fn webhook_batches_are_handled_or_reported_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("local backend");
    let catalog = Arc::new(Catalog::load(None).expect("catalog"));
    let app = backend.app(catalog, Settings::default());
    let delivery = |due_at: i64| {
        json!({
            "org": "org_x", "endpoint_id": "wh_missing", "event_id": "evt_x_completed",
            "event_type": "video.completed", "payload": "{}", "attempt": 2, "due_at": due_at,
        })
        .to_string()
    };
    let later = reelgate::ports::store::now_secs() + 2;
    let event = json!({"Records": [
        {"messageId": "m-garbage", "receiptHandle": "r1", "body": "not a delivery"},
        {"messageId": "m-deleted", "receiptHandle": "r2", "body": delivery(0)},
        {"messageId": "m-later", "receiptHandle": "r3", "body": delivery(later)},
    ]});
    let event: aws_lambda_events::sqs::SqsEvent =
        serde_json::from_value(event).expect("an SQS event");
    let response = reelgate_lambda::handle_webhook_batch(&app, &event).await;
    assert_eq!(
        serde_json::to_value(&response).expect("json"),
        json!({"batchItemFailures": []})
    );
    // The delivery due in 2 s went back on the queue as one more hop, delayed until then.
    let queue = app.webhooks.clone().expect("webhook queue");
    let hop = queue
        .receive(10, Duration::from_secs(60), Duration::from_secs(6))
        .await
        .expect("receive");
    assert_eq!(hop.len(), 1, "one more hop");
    let body: serde_json::Value = serde_json::from_str(&hop[0].body).expect("json");
    assert_eq!(body["event_id"], "evt_x_completed");
    assert_eq!(body["due_at"], later);
    assert!(
        reelgate::ports::store::now_secs() >= later - 1,
        "it was delayed"
    );
    let mut without = app.clone();
    without.webhooks = None;
    let response = reelgate_lambda::handle_webhook_batch(&without, &event).await;
    assert_eq!(
        serde_json::to_value(&response).expect("json")["batchItemFailures"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}
