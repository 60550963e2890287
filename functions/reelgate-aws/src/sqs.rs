//! The message queue on SQS: long polling, receive counts from `ApproximateReceiveCount`, and
//! the dead-letter queue found through the queue's `RedrivePolicy`.

use crate::errors::{describe, service_code};
use async_trait::async_trait;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use aws_sdk_sqs::Client;
use reelgate::ports::queue::{MessageQueue, QueueError, Received};
use std::time::Duration;
use tokio::sync::OnceCell;

/// SQS's longest long poll, per request.
const MAX_WAIT_SECS: u64 = 20;
/// SQS's largest receive batch.
const MAX_BATCH: usize = 10;

/// The SQS adapter of [`MessageQueue`].
#[derive(Clone, Debug)]
pub struct SqsQueue {
    client: Client,
    queue_url: String,
    dead_letter_url: OnceCell<String>,
}

impl SqsQueue {
    pub fn new(config: &aws_config::SdkConfig, queue_url: &str) -> Self {
        Self::from_client(Client::new(config), queue_url)
    }

    pub fn from_client(client: Client, queue_url: &str) -> Self {
        SqsQueue {
            client,
            queue_url: queue_url.to_owned(),
            dead_letter_url: OnceCell::new(),
        }
    }

    /// Names the dead-letter queue instead of reading it from the `RedrivePolicy`.
    pub fn with_dead_letter_url(self, url: &str) -> Self {
        SqsQueue {
            dead_letter_url: OnceCell::new_with(Some(url.to_owned())),
            ..self
        }
    }

    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// The dead-letter queue's URL, from the queue's `RedrivePolicy` (read once).
    pub async fn dead_letter_url(&self) -> Result<&str, QueueError> {
        self.dead_letter_url
            .get_or_try_init(|| async {
                let attrs = self
                    .client
                    .get_queue_attributes()
                    .queue_url(&self.queue_url)
                    .attribute_names(QueueAttributeName::RedrivePolicy)
                    .send()
                    .await
                    .map_err(unavailable)?;
                let policy = attrs
                    .attributes()
                    .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy))
                    .ok_or_else(|| {
                        QueueError::Unavailable(format!(
                            "{} has no RedrivePolicy (no dead-letter queue)",
                            self.queue_url
                        ))
                    })?;
                let arn = dead_letter_arn(policy)?;
                let (account, name) = arn_account_and_name(&arn)?;
                let url = self
                    .client
                    .get_queue_url()
                    .queue_name(name)
                    .queue_owner_aws_account_id(account)
                    .send()
                    .await
                    .map_err(unavailable)?;
                url.queue_url().map(str::to_owned).ok_or_else(|| {
                    QueueError::Unavailable(format!("no URL for the dead-letter queue {arn}"))
                })
            })
            .await
            .map(String::as_str)
    }
}

fn dead_letter_arn(policy: &str) -> Result<String, QueueError> {
    let value: serde_json::Value = serde_json::from_str(policy)
        .map_err(|e| QueueError::Unavailable(format!("unreadable RedrivePolicy: {e}")))?;
    value
        .get("deadLetterTargetArn")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| QueueError::Unavailable("RedrivePolicy without deadLetterTargetArn".into()))
}

/// `arn:aws:sqs:REGION:ACCOUNT:NAME` → (ACCOUNT, NAME).
fn arn_account_and_name(arn: &str) -> Result<(&str, &str), QueueError> {
    let parts: Vec<&str> = arn.split(':').collect();
    match parts.as_slice() {
        [_, _, "sqs", _, account, name] => Ok((account, name)),
        _ => Err(QueueError::Unavailable(format!(
            "not an SQS queue ARN: {arn}"
        ))),
    }
}

fn unavailable<E, R>(err: SdkError<E, R>) -> QueueError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    QueueError::Unavailable(describe(&err))
}

/// A receipt handle that SQS does not know (or whose message is no longer in flight).
fn receipt_error<E, R>(err: SdkError<E, R>) -> QueueError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let stale = service_code(&err).is_some_and(|code| {
        code.contains("ReceiptHandleIsInvalid")
            || code.contains("MessageNotInflight")
            || code.contains("InvalidParameterValue")
    });
    if stale {
        QueueError::StaleReceipt
    } else {
        unavailable(err)
    }
}

/// Whole seconds, rounded up, at most `max`.
fn secs_up(d: Duration, max: u64) -> i32 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    secs.min(max) as i32
}

#[async_trait]
impl MessageQueue for SqsQueue {
    async fn send(&self, body: &str, delay: Duration) -> Result<String, QueueError> {
        let out = self
            .client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            // SQS delays by at most 15 minutes.
            .delay_seconds(secs_up(delay, 900))
            .send()
            .await
            .map_err(unavailable)?;
        out.message_id()
            .map(str::to_owned)
            .ok_or_else(|| QueueError::Unavailable("SQS returned no message id".into()))
    }

    async fn receive(
        &self,
        max: usize,
        visibility: Duration,
        wait: Duration,
    ) -> Result<Vec<Received>, QueueError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Long polls of at most 20 s each until `wait` has passed.
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let out = self
                .client
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages(max.clamp(1, MAX_BATCH) as i32)
                .visibility_timeout(secs_up(visibility, 43_200))
                .wait_time_seconds(secs_up(left, MAX_WAIT_SECS))
                .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
                .send()
                .await
                .map_err(unavailable)?;
            let mut received = Vec::new();
            for m in out.messages() {
                let (Some(id), Some(receipt)) = (m.message_id(), m.receipt_handle()) else {
                    continue;
                };
                let receive_count = m
                    .attributes()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                received.push(Received {
                    message_id: id.to_owned(),
                    receipt: receipt.to_owned(),
                    body: m.body().unwrap_or_default().to_owned(),
                    receive_count,
                });
            }
            if !received.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(received);
            }
        }
    }

    async fn delete(&self, receipt: &str) -> Result<(), QueueError> {
        self.client
            .delete_message()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(receipt_error)?;
        Ok(())
    }

    async fn change_visibility(
        &self,
        receipt: &str,
        visibility: Duration,
    ) -> Result<(), QueueError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt)
            .visibility_timeout(secs_up(visibility, 43_200))
            .send()
            .await
            .map_err(receipt_error)?;
        Ok(())
    }

    async fn dead_letter_count(&self) -> Result<usize, QueueError> {
        let url = self.dead_letter_url().await?;
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .map_err(unavailable)?;
        let count = |name: &QueueAttributeName| {
            out.attributes()
                .and_then(|a| a.get(name))
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        };
        Ok(count(&QueueAttributeName::ApproximateNumberOfMessages)
            + count(&QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_letter_arn_is_read_from_the_policy() {
        let policy = r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:jobs-dlq","maxReceiveCount":"2"}"#;
        let arn = dead_letter_arn(policy).ok();
        assert_eq!(
            arn.as_deref(),
            Some("arn:aws:sqs:us-east-1:000000000000:jobs-dlq")
        );
        let parsed = arn.as_deref().map(arn_account_and_name);
        assert!(matches!(parsed, Some(Ok(("000000000000", "jobs-dlq")))));
    }

    #[test]
    fn seconds_round_up_and_cap() {
        assert_eq!(secs_up(Duration::from_millis(500), 20), 1);
        assert_eq!(secs_up(Duration::ZERO, 20), 0);
        assert_eq!(secs_up(Duration::from_secs(90), 20), 20);
    }
}
