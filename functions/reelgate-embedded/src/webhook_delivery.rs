//! Local webhook delivery: the stand-in for the SQS-triggered webhook Lambda, draining the
//! App's webhook queue through `reelgate::domain::webhooks::deliver`.

use reelgate::app::App;
use std::sync::Arc;
use std::time::Duration;

/// Deliveries the local webhook worker runs at once. Each holds its endpoint's and its
/// organization's slot (`webhooks::ENDPOINT_IN_FLIGHT`, `ORG_IN_FLIGHT`) for at most the POST's
/// 10 s, so one organization never holds more than `ORG_IN_FLIGHT` of these.
pub const WEBHOOK_WORKERS: usize = 32;

/// Delivers forever. Every message is handled in a task of its own as soon as a worker is
/// free: nothing waits for the slowest delivery of a batch.
pub async fn run(app: App) {
    let Some(queue) = app.webhooks.clone() else {
        return;
    };
    let workers = Arc::new(tokio::sync::Semaphore::new(WEBHOOK_WORKERS));
    loop {
        // Wait for a free worker before taking messages off the queue.
        let Ok(first) = workers.clone().acquire_owned().await else {
            return;
        };
        let free = workers.available_permits() + 1;
        let batch = match queue
            .receive(
                free.min(10),
                Duration::from_secs(60),
                Duration::from_secs(2),
            )
            .await
        {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "webhook queue receive failed");
                drop(first);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut first = Some(first);
        for message in batch {
            let permit = match first.take() {
                Some(p) => p,
                // Free: only this loop takes permits, and it received no more than were free.
                None => match workers.clone().acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => return,
                },
            };
            let (app, queue) = (app.clone(), queue.clone());
            tokio::spawn(async move {
                let _permit = permit;
                let outcome = reelgate::domain::webhooks::deliver(
                    app.context(),
                    queue.as_ref(),
                    &message.body,
                )
                .await;
                match outcome {
                    Ok(()) => {
                        if let Err(e) = queue.delete(&message.receipt).await {
                            tracing::warn!(error = %e, "could not delete a handled webhook message");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "webhook message will be retried");
                        let _ = queue
                            .change_visibility(&message.receipt, Duration::from_secs(5))
                            .await;
                    }
                }
            });
        }
    }
}
