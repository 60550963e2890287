//! The SQS-triggered webhook delivery worker.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent};
use reelgate::app::App;

use crate::app::{app_or_exit, flush_traces};
use crate::functions;

/// Handles one SQS batch of webhook deliveries (`reelgate::domain::webhooks::deliver`), each
/// record at once: a failed delivery is not a failed record (its retry is a new, delayed
/// message); only a store or queue fault reports the record as a batch item failure.
pub async fn handle_webhook_batch(app: &App, event: &SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    let Some(queue) = app.webhooks.clone() else {
        tracing::error!("REELGATE_WEBHOOK_QUEUE_URL is not set on the webhook worker");
        for record in &event.records {
            response.add_failure(record.message_id.clone().unwrap_or_default());
        }
        return response;
    };
    let handled = futures::future::join_all(event.records.iter().map(|record| {
        let queue = queue.clone();
        async move {
            let body = record.body.as_deref().unwrap_or_default();
            let outcome =
                reelgate::domain::webhooks::deliver(app.context(), queue.as_ref(), body).await;
            (record.message_id.clone().unwrap_or_default(), outcome)
        }
    }))
    .await;
    for (id, outcome) in handled {
        if let Err(e) = outcome {
            tracing::warn!(error = %e, message_id = %id, "webhook message will be retried");
            response.add_failure(id);
        }
    }
    response
}

/// The SQS-triggered webhook delivery worker.
pub async fn run_webhook_worker() -> Result<(), Error> {
    let (app, _) = app_or_exit(&functions::WEBHOOK_WORKER).await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<SqsEvent>| async move {
            let response = handle_webhook_batch(app, &event.payload).await;
            flush_traces().await;
            Ok::<SqsBatchResponse, Error>(response)
        },
    ))
    .await
}
