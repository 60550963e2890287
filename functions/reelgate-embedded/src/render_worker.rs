//! The local render worker: the stand-in for the SQS-triggered worker Lambda. Each worker takes
//! render messages off the embedded render queue and hands them to the library's worker; the
//! host starts as many as its options ask.

use reelgate::app::App;
use reelgate::domain::videos::workflow::worker;
use std::time::Duration;

/// One worker, forever (`n` names it in logs): a handled message is deleted, one to look at
/// again comes back after the render poll interval.
pub async fn run(app: App, n: usize) {
    let visibility = app.settings.render_visibility;
    loop {
        let batch = match app
            .render_queue
            .receive(1, visibility, Duration::from_secs(2))
            .await
        {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(worker = n, error = %e, "render queue receive failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        for message in batch {
            match worker::handle(&app.pipeline(), &message.body).await {
                worker::Disposition::Done => {
                    if let Err(e) = app.render_queue.delete(&message.receipt).await {
                        tracing::warn!(error = %e, "could not delete a handled render message");
                    }
                }
                worker::Disposition::Retry => {
                    let _ = app
                        .render_queue
                        .change_visibility(&message.receipt, app.settings.render_poll_interval)
                        .await;
                }
            }
        }
    }
}
