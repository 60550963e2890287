//! The SQS-triggered render worker.

use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent};
use reelgate::app::App;
use reelgate::domain::videos::workflow::worker::Disposition;

use crate::app::{app_or_exit, flush_traces};
use crate::functions;

/// Handles one SQS batch: every record through the render worker; the ones to retry are reported
/// as batch item failures (the event source mapping has `ReportBatchItemFailures`), so SQS
/// redelivers just those after their visibility timeout and the rest are deleted.
pub async fn handle_sqs_batch(app: &App, event: &SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in &event.records {
        let id = record.message_id.as_deref().unwrap_or_default();
        let body = record.body.as_deref().unwrap_or_default();
        if reelgate::domain::videos::workflow::worker::handle(&app.pipeline(), body).await
            == Disposition::Retry
        {
            // The queue's visibility timeout is long (sized for the worker's timeout); a retry
            // should come back after one poll interval, as on the local host.
            if let Some(receipt) = record.receipt_handle.as_deref() {
                if let Err(e) = app
                    .render_queue
                    .change_visibility(receipt, app.settings.render_poll_interval)
                    .await
                {
                    tracing::warn!(error = %e, message_id = id, "could not shorten the visibility of a message to retry");
                }
            }
            response.add_failure(id.to_owned());
        }
    }
    response
}

/// The SQS-triggered render worker.
pub async fn run_worker() -> Result<(), Error> {
    let (app, _) = app_or_exit(&functions::RENDER_WORKER).await;
    let app = &app;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<SqsEvent>| async move {
            let response = handle_sqs_batch(app, &event.payload).await;
            flush_traces().await;
            Ok::<SqsBatchResponse, Error>(response)
        },
    ))
    .await
}
